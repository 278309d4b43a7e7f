import CCurl
import Foundation

/// One curl easy handle and everything its callbacks touch.
///
/// A transfer belongs to one ``MultiHandle`` and lives on the engine's loop thread. The multi handle
/// keeps it alive while curl holds its pointer (it is the `userdata` of every callback), and
/// ``finish(result:)`` / ``finish(error:)`` end it exactly once.
final class Transfer: @unchecked Sendable {
    // Safety: created on any thread, then used only on the engine's loop thread (the delegate too is
    // replaced only there, when a data task becomes a download); the request is immutable and Sendable.

    let request: TransferRequest
    /// Who hears about the transfer: the task, or the download task a data task became.
    private(set) var delegate: any TransferDelegate
    private(set) var easyHandle: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var isFinished = false

    // Response state, filled by the header and write callbacks.
    var responseStatus = 0
    var responseVersion = "HTTP/1.1"
    var responseHeaders = HTTPHeaders()
    var response: HTTPResponse?
    var bodyBytesReceived: Int64 = 0
    /// The bytes of the current response head so far, for the header size limit.
    var headerBytesReceived = 0
    /// Where the current response's body starts in the representation (non-zero for a resumed download).
    var bodyStartOffset: Int64 = 0
    /// Whether the sink has been told about the current response (it is, at its first body byte).
    var sinkDidBegin = false

    // Request body state. The source and the sink are opened on the loop thread in makeEasyHandle.
    var source: (any BodySource)?
    var sink: any BodySink = MemoryBodySink()
    var bodyBytesSent: Int64 = 0

    // Pause state. curl_easy_pause fails before a connection exists, so a suspend that arrives then is
    // remembered and applied from the next callback.
    var isPaused = false
    var pendingPause = false

    // The response disposition (``TransferRequest/asksForResponseDisposition``). The write callback pauses
    // at the first body byte until the task answers; a response without a body is held at the end instead,
    // its curl result kept in `deferredResult`. A user pause is separate (`isPaused`): an answer never
    // undoes it.
    var isAwaitingDisposition = false
    var hasDisposition = false
    var deferredResult: CURLcode?
    /// Whether the body is collected in memory (and so subject to the response size limit).
    var collectsBodyInMemory: Bool

    // Why the transfer was stopped by us rather than by curl (a callback returned an abort code).
    var abortError: HeraldError?
    var lastActivity = ContinuousClock.now
    let startDate = Date()

    init(request: TransferRequest, delegate: any TransferDelegate) {
        self.request = request
        self.delegate = delegate
        if case .memory = request.sink { collectsBodyInMemory = true } else { collectsBodyInMemory = false }
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        if let easyHandle { curl_easy_cleanup(easyHandle) }
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    // MARK: - pause

    /// Pauses receiving and sending. Loop thread only.
    func pause() {
        if deferredResult != nil, !isFinished {
            // The transfer is over on the wire and out of curl; holding its completion is the pause.
            isPaused = true
            return
        }
        guard let easyHandle, !isPaused, !isFinished else { return }
        if curl_easy_pause(easyHandle, CURLPAUSE_ALL) == CURLE_OK {
            isPaused = true
            pendingPause = false
        } else {
            // No connection yet (CURLE_BAD_FUNCTION_ARGUMENT): apply it from the first callback.
            pendingPause = true
        }
    }

    /// Continues a paused transfer where it stopped. Loop thread only.
    ///
    /// Unpausing delivers buffered data synchronously, inside `curl_easy_pause`, so the write callback
    /// runs before this returns.
    func unpause() {
        pendingPause = false
        guard let easyHandle, isPaused, !isFinished else { return }
        isPaused = false
        lastActivity = .now
        // Still waiting for the task's answer to the response: that answer unpauses.
        guard !isAwaitingDisposition else { return }
        if let deferred = deferredResult {
            deferredResult = nil
            finish(result: deferred)
            return
        }
        curl_easy_pause(easyHandle, CURLPAUSE_CONT)
    }

    // MARK: - response disposition

    /// The task allowed the response: continue (unless the user suspended the task meanwhile — then their
    /// resume continues it). Loop thread only, outside curl callbacks.
    func allowResponse() {
        guard isAwaitingDisposition, !isFinished else { return }
        isAwaitingDisposition = false
        hasDisposition = true
        guard !isPaused else { return }
        if let deferred = deferredResult {
            deferredResult = nil
            finish(result: deferred)
            return
        }
        guard let easyHandle else { return }
        lastActivity = .now
        // Delivers the chunk curl kept when the write callback paused, synchronously, then goes on.
        curl_easy_pause(easyHandle, CURLPAUSE_CONT)
    }

    /// The task became a download: the body goes to `sink` and `delegate` hears about it from now on.
    /// Returns the error that must end the transfer when the sink can't be opened. Loop thread only.
    func becomeDownload(sink newSink: TransferSink, delegate newDelegate: any TransferDelegate) -> HeraldError? {
        guard isAwaitingDisposition, !isFinished else { return nil }
        do throws(HeraldError) {
            sink = try newSink.open()
        } catch {
            return error
        }
        collectsBodyInMemory = false
        delegate = newDelegate
        allowResponse()
        return nil
    }

    // MARK: - finishing

    /// Ends the transfer with curl's result. Loop thread only, outside curl callbacks.
    func finish(result: CURLcode) {
        if result == CURLE_OK, abortError == nil, request.asksForResponseDisposition, !hasDisposition,
            request.asksForDisposition(status: responseStatus, headers: responseHeaders), !isFinished
        {
            // A response without a body never reached the write callback: ask now, finish on the answer.
            deferredResult = result
            if !isAwaitingDisposition {
                isAwaitingDisposition = true
                if response == nil { response = makeResponse() }
                if let response { delegate.transferNeedsResponseDisposition(response, transfer: self) }
            }
            return
        }
        var error: HeraldError?
        if let abortError {
            error = abortError
        } else if result != CURLE_OK {
            var osErrno: Int = 0
            if let easyHandle { herald_easy_getinfo_long(easyHandle, CURLINFO_OS_ERRNO, &osErrno) }
            let text = String(cString: errorBuffer)
            if let oversized = oversizedHeadError(result: result, errorText: text) {
                error = oversized
            } else if result == CURLE_UNSUPPORTED_PROTOCOL, requestWasSent {
                // curl reports a malformed status line as an unsupported protocol: no status line at all
                // ("HTTP/0.9"), an unknown version (`HTTP/9.9`), a code that is not three digits
                // (`HTTP/1.1 abc`, `HTTP/1.1 20`). The URL's scheme was checked before the transfer started and
                // the request went out, so it is the server's answer that is at fault.
                error = HeraldError(
                    .badServerResponse, "The server's status line is malformed or not HTTP.",
                    curlCode: Int32(result.rawValue), curlMessage: text, url: request.url)
            } else {
                error = HeraldError.fromCurl(
                    result, osErrno: Int32(truncatingIfNeeded: osErrno), errorBuffer: text, url: request.url)
            }
        }
        deliver(error: error)
    }

    /// Whether curl sent the request (any request bytes), so that a failure is about the server's answer.
    private var requestWasSent: Bool {
        guard let easyHandle else { return false }
        var requestBytes = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_REQUEST_SIZE, &requestBytes)
        return requestBytes > 0
    }

    /// Ends the transfer with an error of ours (cancelled, invalid, …). Loop thread only.
    func finish(error: HeraldError) {
        deliver(error: error)
    }

    private func deliver(error: HeraldError?) {
        var error = error
        guard !isFinished else { return }
        isFinished = true
        deferredResult = nil
        isAwaitingDisposition = false
        let metrics = easyHandle.map { TransferMetrics(easyHandle: $0, startDate: startDate) }
        if response == nil, responseStatus >= 200 {
            response = makeResponse()
        }
        if error == nil, let response, !sinkDidBegin, let failure = beginSink(for: response) {
            // A final response with an empty body still replaces what an earlier one (or a partial
            // file that the server declined to resume) left in the sink.
            error = failure
        }
        let body = sink.finish()
        let outcome = TransferOutcome(response: response, body: body, file: sink.file, error: error, metrics: metrics)
        if let easyHandle {
            curl_easy_cleanup(easyHandle)
            self.easyHandle = nil
        }
        delegate.transferDidFinish(outcome)
    }

    /// Tells the sink a response body starts; returns the error that must stop the transfer, if any.
    func beginSink(for response: HTTPResponse) -> HeraldError? {
        sinkDidBegin = true
        switch sink.begin(response: response) {
        case .success(let offset):
            bodyStartOffset = offset
            return nil
        case .failure(let error):
            return error
        }
    }

    func makeResponse() -> HTTPResponse {
        var url = request.url
        if let easyHandle {
            var effective: UnsafeMutablePointer<CChar>?
            if herald_easy_getinfo_string(easyHandle, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK,
                let effective
            {
                // Parse only when a redirect changed it: URL parsing costs more than the comparison.
                let text = String(cString: effective)
                if text != request.url.absoluteString, let parsed = URL(string: text) { url = parsed }
            }
        }
        return HTTPResponse(
            url: url, statusCode: responseStatus, headers: responseHeaders, httpVersion: responseVersion)
    }

    // MARK: - configuration

    /// Creates and configures the easy handle; on failure finishes the transfer and returns `nil`.
    func makeEasyHandle() -> UnsafeMutableRawPointer? {
        do throws(HeraldError) {
            source = try request.body?.open()
            sink = try request.sink.open()
        } catch {
            finish(error: error)
            return nil
        }
        guard let easy = curl_easy_init() else {
            finish(error: HeraldError(.outOfMemory, "curl_easy_init failed."))
            return nil
        }
        easyHandle = easy
        if let failure = configure(easy) {
            finish(error: failure)
            return nil
        }
        return easy
    }

    private func configure(_ easy: UnsafeMutableRawPointer) -> HeraldError? {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: (String, CURLcode)?
        func check(_ option: String, _ code: CURLcode) {
            if code != CURLE_OK, failed == nil { failed = (option, code) }
        }
        check("URL", herald_easy_setopt_string(easy, CURLOPT_URL, request.url.absoluteString))
        check("NOSIGNAL", herald_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        check("ERRORBUFFER", herald_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        let protocols = request.allowedProtocols.joined(separator: ",")
        // PROTOCOLS_STR from libcurl 7.85, the PROTOCOLS bitmask before it (see the shim).
        check("PROTOCOLS", herald_easy_setopt_protocols(easy, protocols))
        // Herald follows redirects itself (SessionTask+Redirects) so a hook sees and may veto every hop.
        check("FOLLOWLOCATION", herald_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        if let credential = request.credential {
            // curl computes the header: Basic at once, Digest after its own unauthenticated round-trip
            // for a fresh nonce (the one in the 401 Herald saw belongs to another request).
            check("USERNAME", herald_easy_setopt_string(easy, CURLOPT_USERNAME, credential.credential.user))
            check("PASSWORD", herald_easy_setopt_string(easy, CURLOPT_PASSWORD, credential.credential.password))
            let scheme = credential.scheme == .digest ? herald_curlauth_digest : herald_curlauth_basic
            check("HTTPAUTH", herald_easy_setopt_long(easy, CURLOPT_HTTPAUTH, scheme))
        }
        if case .file = request.sink {
            // A file holds the representation's bytes as sent, so a resumed Range lines up with it
            // (decoded bytes would not); larger buffers mean fewer write callbacks and writes.
            check("BUFFERSIZE", herald_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, 256 * 1024))
        } else {
            check("ACCEPT_ENCODING", herald_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, ""))
        }
        check("HTTP_VERSION", herald_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, request.httpVersion.curlValue))
        configureTimeouts(easy, check: check)
        configureSecurity(easy, check: check)
        configureProxy(easy, check: check)
        configureMethodAndBody(easy, check: check)
        configureHeaders(easy, check: check)

        check("WRITEDATA", herald_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        check("WRITEFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_WRITEFUNCTION, Transfer.writeCallback))
        check("HEADERDATA", herald_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
        check("HEADERFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_HEADERFUNCTION, Transfer.headerCallback))
        check("READDATA", herald_easy_setopt_pointer(easy, CURLOPT_READDATA, context))
        check("READFUNCTION", herald_easy_setopt_data_cb(easy, CURLOPT_READFUNCTION, Transfer.readCallback))
        check("SEEKDATA", herald_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, context))
        check("SEEKFUNCTION", herald_easy_setopt_seek_cb(easy, Transfer.seekCallback))
        check("XFERINFODATA", herald_easy_setopt_pointer(easy, CURLOPT_XFERINFODATA, context))
        check("XFERINFOFUNCTION", herald_easy_setopt_xferinfo_cb(easy, Transfer.progressCallback))
        check("NOPROGRESS", herald_easy_setopt_long(easy, CURLOPT_NOPROGRESS, 0))
        if let (option, code) = failed {
            return HeraldError(
                .invalidRequest, "libcurl refused option \(option).", curlCode: Int32(code.rawValue),
                curlMessage: String(cString: curl_easy_strerror(code)), url: request.url)
        }
        return nil
    }

    private func configureTimeouts(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        if request.requestTimeout > 0 {
            let milliseconds = max(1, Int(request.requestTimeout * 1000))
            check("CONNECTTIMEOUT_MS", herald_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds))
            // The low-speed check makes curl wake up at least once a second on a silent connection, so
            // the progress callback can enforce the idle timeout with sub-second precision.
            let seconds = max(1, Int(request.requestTimeout.rounded(.up)))
            check("LOW_SPEED_LIMIT", herald_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1))
            check("LOW_SPEED_TIME", herald_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, seconds))
        }
        if request.resourceTimeout > 0 {
            let milliseconds = max(1, Int(request.resourceTimeout * 1000))
            check("TIMEOUT_MS", herald_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds))
        }
    }

    private func configureMethodAndBody(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        let method = request.method
        let sendsBody = source != nil || ["POST", "PUT", "PATCH"].contains(method)
        if method == "HEAD" {
            check("NOBODY", herald_easy_setopt_long(easy, CURLOPT_NOBODY, 1))
        } else if sendsBody {
            // UPLOAD + a custom method sends any method with a body from the read callback: with a known
            // length curl sends Content-Length, with -1 (a stream) it sends chunks.
            check("UPLOAD", herald_easy_setopt_long(easy, CURLOPT_UPLOAD, 1))
            let length = source.map { $0.length ?? -1 } ?? 0
            check("INFILESIZE", herald_easy_setopt_off(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(length)))
            check("CUSTOMREQUEST", herald_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method))
        } else if method != "GET" {
            check("CUSTOMREQUEST", herald_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method))
        }
    }

    private func configureHeaders(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        var list: UnsafeMutablePointer<curl_slist>?
        for field in request.headers {
            // "Name:" alone would tell curl to remove the header; "Name;" sends it with an empty value.
            let line = field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)"
            list = curl_slist_append(list, line)
        }
        if let cookie = request.cookieHeader, !request.headers.contains("Cookie") {
            list = curl_slist_append(list, "Cookie: \(cookie)")
        }
        if !request.headers.contains("Expect") {
            // curl waits up to a second for "100 Continue" on larger bodies; never stall an upload on it.
            list = curl_slist_append(list, "Expect:")
        }
        headerList = list
        check("HTTPHEADER", herald_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list))
    }
}
