import CCurl
import Foundation

// The easy handle: taken from the session's pool (or made) and given every option by the thread that
// prepares the transfer, before the engine sees it; the body sink is opened on the loop thread.
extension Transfer {
    /// Opens the request body and creates and configures the easy handle, before the engine sees the
    /// transfer: on the thread that starts it, so the loop thread spends its time moving bytes. A failure is
    /// kept for ``makeEasyHandle(from:)`` to finish the transfer with, on the loop thread. Call once, before
    /// sending the transfer to the engine.
    package func prepare(from pool: EasyHandlePool?) {
        guard case .unprepared = preparation else { return }
        do throws(TransferError) {
            source = try request.body?.open()
        } catch {
            preparation = .failed(error)
            return
        }
        self.pool = pool
        proxyFromEnvironment = request.proxy == nil && environmentMayNameProxy
        profile = makeProfile()
        if let (reused, previous) = pool?.take() {
            easyHandle = reused
            let carriesOver: Bool
            if let profile, let previous { carriesOver = profile == previous } else { carriesOver = false }
            // The same profile: every option but the per-transfer ones is already set as this transfer needs.
            if !carriesOver { curl_easy_reset(reused) }
            guard configure(reused, onlyPerTransferOptions: carriesOver) != nil else {
                preparation = .prepared
                return
            }
            // A reused handle that refuses an option is dropped, with the header list made for it, and a new
            // one configured in its place.
            curl_easy_cleanup(reused)
            easyHandle = nil
            headerList = nil
        }
        guard let easy = curl_easy_init() else {
            preparation = .failed(TransferError(.outOfMemory, "curl_easy_init failed."))
            return
        }
        easyHandle = easy
        if let failure = configure(easy, onlyPerTransferOptions: false) {
            preparation = .failed(failure)
            return
        }
        preparation = .prepared
    }

    /// Opens the sink and returns the prepared easy handle; on failure finishes the transfer and returns
    /// `nil`. Loop thread.
    func makeEasyHandle(from pool: EasyHandlePool) -> UnsafeMutableRawPointer? {
        prepare(from: pool)
        if case .failed(let error) = preparation {
            finish(error: error)
            return nil
        }
        do throws(TransferError) {
            // A body in memory goes to the sink made with the transfer, still empty: no second one.
            if !collectsBodyInMemory { sink = try request.sink.open(validator: request.headers["If-Range"]) }
        } catch {
            finish(error: error)
            return nil
        }
        // The idle timeout counts from here, not from when a suspended task prepared the transfer.
        lastActivity = ActivityClock.now
        return easyHandle
    }

    /// Whether the body is decoded (`Content-Encoding`) before it reaches the sink: for bodies in memory. A
    /// file keeps the representation's bytes as sent, and so does a stream: libcurl goes on decoding the rest
    /// of a read after its write callback pauses the transfer, into a buffer of its own, so a well-compressed
    /// read (a 512 KiB read of zstd can hold gigabytes) would overrun the consumer's bound, or fail the
    /// transfer with `CURLE_OUT_OF_MEMORY` past libcurl's 64 MiB.
    var decodesContent: Bool {
        switch request.sink {
        case .memory: true
        case .file, .stream: false
        }
    }

    /// libcurl's receive buffer (`CURLOPT_BUFFERSIZE`) for this transfer's sink. Larger means fewer reads and
    /// write callbacks for a large body; a small response only touches the buffer's first page. A body in
    /// memory takes 64 KiB (a 256 MiB body arrives about 20% sooner than with curl's 16 KiB). A file and a
    /// stream take 512 KiB, the most libcurl before 7.88 takes: a 256 MiB download to a file on loopback
    /// arrives about a fifth sooner than with 256 KiB, and a stream's consumer is woken once per read that
    /// finds it waiting, so fewer, larger reads mean fewer wake-ups (a 1 GiB `bytes(for:)` ran at 827 MiB/s
    /// and 1.19 ms of CPU per MiB with 64 KiB).
    private var receiveBufferSize: Int {
        switch request.sink {
        case .memory: 64 * 1024
        case .file, .stream: 512 * 1024
        }
    }

    /// Whether this transfer opens a connection of its own, closed after it: HTTP/2 with prior knowledge in
    /// cleartext, where with this libcurl a second request on a connection would fail
    /// (``CurlFeatures/failsPriorKnowledgeReuse``), whether it came after the first or beside it as a stream
    /// (which libcurl would do at the per-host limit). Over TLS libcurl negotiates the protocol in the handshake
    /// as for `.http2`, and its connections are shared as theirs. Part of the profile: a pooled handle that one
    /// scheme's transfer configured keeps the two options for the next.
    private var opensConnectionPerTransfer: Bool {
        request.httpVersion == .http2PriorKnowledge && CurlFeatures.failsPriorKnowledgeReuse && !isOverTLS
    }

    /// What this transfer's options are set from, apart from the per-transfer ones; `nil` when the request
    /// has a credential, whose options are set afresh on a reset handle every time.
    private func makeProfile() -> EasyHandleProfile? {
        guard request.credential == nil else { return nil }
        return EasyHandleProfile(
            .init(
                allowedProtocols: request.allowedProtocols, method: request.method, sendsBody: sendsBody,
                decodesContent: decodesContent,
                receiveBufferSize: receiveBufferSize,
                httpVersion: request.httpVersion, opensConnectionPerTransfer: opensConnectionPerTransfer,
                requestTimeout: request.requestTimeout,
                resourceTimeout: request.resourceTimeout, trust: request.trust,
                proxy: request.proxy, environmentMayNameProxy: proxyFromEnvironment,
                watchesGoawayRefusal: watchesGoawayRefusal))
    }

    /// Sets the options on `easy`: all of them, or with `onlyPerTransferOptions` (a handle whose options were
    /// set from this transfer's ``profile``) only those that change with every transfer: the URL, the error
    /// buffer, the header list, the body's length and the callbacks' data. The error says which option libcurl
    /// refused, if one was.
    func configure(_ easy: UnsafeMutableRawPointer, onlyPerTransferOptions: Bool) -> TransferError? {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: (String, CURLcode)?
        func check(_ option: String, _ code: CURLcode) {
            if code != CURLE_OK, failed == nil { failed = (option, code) }
        }
        let url = request.url.absoluteString
        // Parsed once, here, for every handle this transfer configures (or the session's last parse of the
        // same URL); set even when nil, so that a handle from the pool never starts with the URL handle of
        // the transfer before. Then the text: libcurl 8.12 and later drop CURLOPT_URL when CURLOPT_CURLU is set.
        if parsedURL == nil { parsedURL = pool.map { $0.parsedURL(for: url) } ?? ParsedURL(url) }
        check(
            "CURLU",
            herald_easy_setopt_pointer(easy, CURLOPT_CURLU, parsedURL.map { UnsafeMutableRawPointer($0.handle) }))
        // `withCString`: a `String` passed straight to a C parameter is copied into a new array first.
        check("URL", url.withCString { herald_easy_setopt_string(easy, CURLOPT_URL, $0) })
        if onlyPerTransferOptions {
            check("ERRORBUFFER", herald_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
            if sendsBody { configureBodyLength(easy, check: check) }
            configureHeaders(easy, check: check)
            configureCallbackData(easy, context: context, check: check)
            // A pause pending in the handle's last transfer turned the progress callback on.
            check("NOPROGRESS", herald_easy_setopt_long(easy, CURLOPT_NOPROGRESS, 1))
            // The profile has the version but not the URL's scheme, on which waiting depends.
            configureMultiplexing(easy, check: check)
            // Nor its host, on which going direct depends.
            configureNoProxy(easy, check: check)
            return failed.map(refusal)
        }
        check("NOSIGNAL", herald_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        check("ERRORBUFFER", herald_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        // A cancel or a timeout while the host name is being looked up would otherwise wait on the loop thread,
        // which every session shares, until the lookup ends (seconds, with a name server that doesn't answer).
        // Refused by a libcurl older than 7.87.0, which then waits as before: not a reason to fail the request.
        _ = herald_easy_setopt_quick_exit(easy)
        // PROTOCOLS_STR from libcurl 7.85, the PROTOCOLS bitmask before it (see the shim).
        check("PROTOCOLS", herald_easy_setopt_protocols(easy, request.allowedProtocols))
        // Herald follows redirects itself (SessionTask+Redirects) so a hook sees and may veto every hop.
        check("FOLLOWLOCATION", herald_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        // A proxy's answer to CONNECT ("200 Connection established") would reach the header callback as a
        // head of its own; the callback takes every final head there for the response.
        check("SUPPRESS_CONNECT_HEADERS", herald_easy_setopt_long(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1))
        if let credential = request.credential {
            // curl computes the header: Basic at once, Digest after its own unauthenticated round-trip
            // for a fresh nonce (the one in the 401 Herald saw belongs to another request).
            check("USERNAME", herald_easy_setopt_string(easy, CURLOPT_USERNAME, credential.user))
            check("PASSWORD", herald_easy_setopt_string(easy, CURLOPT_PASSWORD, credential.password))
            let scheme = credential.usesDigest ? herald_curlauth_digest : herald_curlauth_basic
            check("HTTPAUTH", herald_easy_setopt_long(easy, CURLOPT_HTTPAUTH, scheme))
        }
        check("BUFFERSIZE", herald_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, receiveBufferSize))
        if decodesContent {
            // Decodes what the server encoded; the Accept-Encoding header itself is sent by configureHeaders.
            // A file holds the representation's bytes as sent, so a resumed Range lines up with it (decoded
            // bytes would not).
            check("ACCEPT_ENCODING", herald_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, ""))
        }
        check("HTTP_VERSION", herald_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, request.httpVersion.curlValue))
        configureMultiplexing(easy, check: check)
        if opensConnectionPerTransfer {
            check("FRESH_CONNECT", herald_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1))
            check("FORBID_REUSE", herald_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1))
        }
        // The session's cache of TLS sessions (EasyHandlePool), also after curl_easy_reset, which keeps it.
        if let share = pool?.tlsSessionShare { check("SHARE", herald_easy_setopt_pointer(easy, CURLOPT_SHARE, share)) }
        configureTimeouts(easy, check: check)
        configureSecurity(easy, check: check)
        configureProxy(easy, check: check)
        configureMethodAndBody(easy, check: check)
        configureHeaders(easy, check: check)

        configureCallbackData(easy, context: context, check: check)
        check("WRITEFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_WRITEFUNCTION, Transfer.writeCallback))
        check("HEADERFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_HEADERFUNCTION, Transfer.headerCallback))
        check("READFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_READFUNCTION, Transfer.readCallback))
        check("SEEKFUNCTION", herald_easy_setopt_seek_cb(easy, Transfer.seekCallback))
        check("XFERINFOFUNCTION", herald_easy_setopt_xferinfo_cb(easy, Transfer.progressCallback))
        // Off until a pause is refused before the connection exists (Transfer.pause): called about ten
        // times per request, the callback had nothing else to do once the idle timeout moved out of it.
        check("NOPROGRESS", herald_easy_setopt_long(easy, CURLOPT_NOPROGRESS, 1))
        if let connections = pool?.connections {
            // The pool's sockets open and close through its tracker (ConnectionTracker); refused options leave
            // the transfer untracked, not failed: the counts are an observation.
            reportsConnection =
                ConnectionTracker.setCallbacks(on: easy, context: connections, transfer: context) == CURLE_OK
                && CurlFeatures.reportsConnectionBeforeRequest
        }
        return failed.map(refusal)
    }

    /// Whether the transfer waits for a connection to its origin that is being opened, to learn whether it
    /// speaks HTTP/2, rather than open one of its own (`CURLOPT_PIPEWAIT`).
    ///
    /// Requests started together to a new origin then share the first connection as HTTP/2 streams, instead of
    /// each opening a connection (up to the per-host limit) before any knows that one would do. Only over TLS
    /// with ``ProtocolVersion/automatic`` or ``ProtocolVersion/http2``, where the handshake's protocol
    /// negotiation (ALPN) says whether the connection speaks HTTP/2: the wait lasts one handshake.
    ///
    /// Not in cleartext. With ``ProtocolVersion/automatic`` or an ``ProtocolVersion/http2`` upgrade libcurl
    /// learns whether a cleartext connection multiplexes only from its first response head, and waiting would
    /// hold every request of a burst until then (an upgrade is rare: most servers answer with HTTP/1.1). With
    /// ``ProtocolVersion/http2PriorKnowledge`` in cleartext libcurl 7.88 fails the requests that join the first
    /// connection (CurlFeatures.failsPriorKnowledgeReuse); over TLS it negotiates as for
    /// ``ProtocolVersion/http2`` (offering HTTP/2 alone from libcurl 8.10).
    var waitsForMultiplexing: Bool {
        switch request.httpVersion {
        case .http1_1: false
        case .automatic, .http2, .http2PriorKnowledge: isOverTLS
        }
    }

    /// Whether the request goes over TLS (`https`).
    var isOverTLS: Bool { request.url.scheme?.lowercased() == "https" }

    private func configureMultiplexing(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        check("PIPEWAIT", herald_easy_setopt_long(easy, CURLOPT_PIPEWAIT, waitsForMultiplexing ? 1 : 0))
    }

    /// Points every callback's data at this transfer.
    private func configureCallbackData(
        _ easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void
    ) {
        check("WRITEDATA", herald_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        check("HEADERDATA", herald_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
        check("READDATA", herald_easy_setopt_pointer(easy, CURLOPT_READDATA, context))
        check("SEEKDATA", herald_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, context))
        check("XFERINFODATA", herald_easy_setopt_pointer(easy, CURLOPT_XFERINFODATA, context))
        // How the multi handle finds the transfer of a finished easy handle (CURLINFO_PRIVATE).
        check("PRIVATE", herald_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context))
        // Which connection the transfer takes (ConnectionTracker); untracked if refused, as above.
        if pool?.connections != nil {
            reportsConnection =
                ConnectionTracker.setPrerequest(on: easy, transfer: context) == CURLE_OK
                && CurlFeatures.reportsConnectionBeforeRequest
        }
        // Whether a GOAWAY refused the request, for a request that is sent again after a refusal alone.
        configureGoawayWatch(easy, context: context, check: check)
    }

    /// The error for an option libcurl refused.
    private func refusal(_ failure: (option: String, code: CURLcode)) -> TransferError {
        TransferError(
            .invalidRequest, "libcurl refused option \(failure.option).", curlCode: Int32(failure.code.rawValue),
            curlMessage: String(cString: curl_easy_strerror(failure.code)), url: request.url)
    }

    private func configureTimeouts(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        // The idle timeout itself is the multi handle's timer (MultiHandle.checkIdleTransfers), not curl's
        // low-speed check, which costs a timer update in curl at every read.
        let connectTimeout = Self.connectTimeoutMilliseconds(
            requestTimeout: request.requestTimeout, resourceTimeout: request.resourceTimeout)
        check("CONNECTTIMEOUT_MS", herald_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, connectTimeout))
        if let milliseconds = Self.milliseconds(request.resourceTimeout) {
            check("TIMEOUT_MS", herald_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds))
        }
    }

    /// How long connecting may take: the idle timeout; without one, the resource timeout, or no limit at all
    /// (about 24 days). Never 0, which would leave libcurl's own 300 s where the caller turned the limit off.
    package static func connectTimeoutMilliseconds(requestTimeout: TimeInterval, resourceTimeout: TimeInterval) -> Int {
        milliseconds(requestTimeout) ?? milliseconds(resourceTimeout) ?? Int(Int32.max)
    }

    /// A timeout for libcurl in whole milliseconds, at least 1; `nil` for none: zero, negative, NaN or infinite
    /// seconds. Longer than about 49.7 days counts as that long: libcurl keeps its timeouts in 32 bits of
    /// milliseconds, and cuts a longer one to 2³² − 1 itself.
    package static func milliseconds(_ seconds: TimeInterval) -> Int? {
        guard seconds > 0, seconds.isFinite else { return nil }
        return max(1, Int(min(seconds * 1000, Double(UInt32.max))))
    }

    private func configureMethodAndBody(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        let method = request.method
        if method == "HEAD" {
            check("NOBODY", herald_easy_setopt_long(easy, CURLOPT_NOBODY, 1))
        } else if sendsBody {
            // UPLOAD + a custom method sends any method with a body from the read callback: with a known
            // length curl sends Content-Length, with -1 (a stream) it sends chunks.
            check("UPLOAD", herald_easy_setopt_long(easy, CURLOPT_UPLOAD, 1))
            configureBodyLength(easy, check: check)
            check("CUSTOMREQUEST", herald_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method))
        } else if method != "GET" {
            check("CUSTOMREQUEST", herald_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method))
        }
    }

    /// The body's length (`-1`: unknown, sent in chunks), which changes with every transfer.
    private func configureBodyLength(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        let length = source.map { $0.length ?? -1 } ?? 0
        check("INFILESIZE", herald_easy_setopt_off(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(length)))
    }

    /// Whether the request goes out with a body (curl's upload mode).
    private var sendsBody: Bool {
        guard source == nil else { return true }
        switch request.method {
        case "POST", "PUT", "PATCH": return true
        default: return false
        }
    }

    private func configureHeaders(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        let key = HeaderList.Key(
            headers: request.headers, cookie: request.cookieHeader, decodesContent: decodesContent,
            sendsBody: sendsBody)
        // Consecutive requests mostly send the same fields: the session's last list serves them.
        let list = pool?.headerList(for: key) ?? HeaderList(key: key)
        headerList = list
        check("HTTPHEADER", herald_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list.head))
    }
}
