import CCurl
import Foundation

/// One curl easy handle and everything its callbacks touch.
///
/// A transfer belongs to one ``MultiHandle`` and lives on the engine's loop thread. The multi handle
/// keeps it alive while curl holds its pointer (it is the `userdata` of every callback), and
/// ``finish(result:)`` / ``finish(error:)`` end it exactly once.
package final class Transfer: @unchecked Sendable {
    // Exclusivity: the stored properties are `@exclusivity(unchecked)`. They are used by one thread at a
    // time (below) and never through overlapping accesses, and Swift's run-time check cost the loop thread
    // thousands of instructions per transfer (about 80 per access), here and in `MultiHandle`, `Engine`
    // and `MemoryBodySink`.
    // Safety: created and prepared (`prepare(from:)`) on one thread before it is sent to the engine, then used
    // only on the engine's loop thread, which the engine's command queue orders after the preparation (the
    // delegate too is replaced only there, when a data task becomes a download); the request is immutable
    // and Sendable.

    package let request: TransferRequest
    /// Who hears about the transfer: the task, or the download task a data task became.
    @exclusivity(unchecked) private(set) var delegate: any TransferDelegate
    @exclusivity(unchecked) var easyHandle: UnsafeMutableRawPointer?
    /// The request's header fields, which curl reads until the handle is cleaned up.
    /// The header lines curl sends for this transfer, held while curl may read them.
    @exclusivity(unchecked) var headerList: HeaderList?
    /// The URL as libcurl parsed it when the transfer was prepared (`CURLOPT_CURLU`), held while curl may read it.
    @exclusivity(unchecked) var parsedURL: ParsedURL?
    /// Where curl writes its message for a failure (`CURLOPT_ERRORBUFFER`).
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// Where the easy handle came from and goes back to when the transfer finishes.
    @exclusivity(unchecked) var pool: EasyHandlePool?
    /// What the easy handle's options were set from, given back to the pool with the handle; `nil` when
    /// the request has options that are never carried over (a credential, a body).
    @exclusivity(unchecked) var profile: EasyHandleProfile?
    /// Without an explicit proxy, whether a proxy environment variable is set for the URL's scheme: read once,
    /// when the transfer is prepared, for its profile and its options.
    @exclusivity(unchecked) package internal(set) var proxyFromEnvironment = false
    /// Whether ``prepare(from:)`` ran, and how it went.
    @exclusivity(unchecked) var preparation = Preparation.unprepared
    /// Where the transfer is in its life: the user's pause, the task's answer, a held result, an abort, the end.
    @exclusivity(unchecked) var machine = TransferStateMachine()

    // Response state, filled by the header and write callbacks.
    @exclusivity(unchecked) var responseStatus = 0
    @exclusivity(unchecked) var responseVersion = "HTTP/1.1"
    /// Made with room for a typical head's fields (about 550 bytes) by the thread that makes the transfer,
    /// the one calling `resume()` (often the completion queue's, where the response is released again), so
    /// that the list isn't memory of the loop thread's arena that another thread frees (see
    /// `LoopThreadFrees`).
    @exclusivity(unchecked) var responseHeaders = HeaderFields(capacity: 16)
    /// The last values of common response fields on the engine's loop thread, set when the transfer joins
    /// its multi handle. Loop thread only.
    @exclusivity(unchecked) var recentFieldValues: RecentFieldValues?
    /// Where the current head's first `Content-Length` field is in `responseHeaders`, if it has one: the
    /// declared length is read from it without looking the name up again.
    @exclusivity(unchecked) var contentLengthIndex: Int?
    /// Whether the current head has `Content-Length` fields with different values. Loop thread only.
    @exclusivity(unchecked) var hasConflictingLengths = false
    @exclusivity(unchecked) var response: ResponseHead?
    /// The current response's declared `Content-Length`, read once when it is announced.
    @exclusivity(unchecked) var expectedBodyLength: Int64?
    /// The total every body chunk reports progress against: ``expectedBodyLength``, unless libcurl decodes the
    /// body (its declared length is then the encoded one, and the total unknown).
    @exclusivity(unchecked) var reportedBodyLength: Int64?
    /// Whether the current body is dropped as it comes: a `416` saying a continued file is already whole, whose
    /// error page is neither the file's nor its progress. Loop thread only.
    @exclusivity(unchecked) var bodyGoesNowhere = false
    @exclusivity(unchecked) var bodyBytesReceived: Int64 = 0
    /// The bytes of the current response head so far, for the header size limit.
    @exclusivity(unchecked) var headerBytesReceived = 0
    /// Where the current response's body starts in the representation (non-zero for a resumed download).
    @exclusivity(unchecked) var bodyStartOffset: Int64 = 0

    /// How ``prepare(from:)`` went, if it ran.
    enum Preparation {
        case unprepared, prepared
        case failed(TransferError)
    }

    // Request body state. The source is opened by `prepare(from:)`; a body in memory goes to the sink made
    // here, and any other sink is opened on the loop thread in makeEasyHandle.
    @exclusivity(unchecked) var source: (any BodySource)?
    @exclusivity(unchecked) var sink: any BodySink = MemoryBodySink()
    @exclusivity(unchecked) var bodyBytesSent: Int64 = 0
    /// Whether the transfer is out of curl, but still in its pool, because its pause came before it had a
    /// connection (``MultiHandle/park(_:)``). Loop thread only.
    @exclusivity(unchecked) var isParked = false
    /// Whether the read callback paused sending because a streamed body's reader had nothing yet (or the body
    /// was rewound): the reader's wake (`bodyAvailable`) unpauses it. Loop thread only.
    @exclusivity(unchecked) var isWaitingForBody = false
    /// What a streamed body's reader calls when it has something: sends the transfer `bodyAvailable`. Kept for a
    /// final response that arrives while sending waits for the reader (see `headDidEnd`). Loop thread only.
    @exclusivity(unchecked) var bodyWake: (@Sendable () -> Void)?
    /// Whether ``socketNoLongerWatched()`` continued the transfer since its last response head began. Loop thread
    /// only.
    @exclusivity(unchecked) var continuedOnceUnwatched = false

    /// Whether the body is collected in memory (and so subject to the response size limit).
    @exclusivity(unchecked) var collectsBodyInMemory: Bool

    /// Where the transfer is in its multi handle's list while it is in the pool, else -1. Loop thread only.
    @exclusivity(unchecked) var poolSlot = -1
    /// When a byte last moved, on ``ActivityClock``.
    @exclusivity(unchecked) var lastActivity = ActivityClock.now
    /// Whether libcurl has given the transfer a connection and is about to send its request
    /// (`CURLOPT_PREREQFUNCTION`): until then it waits for a connection (``MultiHandle`` limits), which is no
    /// silence of the server's, and connecting is bounded by the connect timeout. Loop thread only.
    @exclusivity(unchecked) var hasConnection = false
    /// Whether libcurl will report the connection (the pre-request callback is set on the handle for this
    /// transfer): only then is a transfer without one known to be waiting for one. Loop thread only after
    /// preparation.
    @exclusivity(unchecked) var reportsConnection = false

    /// Whether the transfer waits for a connection libcurl hasn't given it yet, which is no idleness.
    var waitsForConnection: Bool { reportsConnection && !hasConnection }
    /// Whether the request was sent again on a fresh connection, a reused one having died under it (see
    /// `retriesOnFreshConnection(after:)`). Loop thread only.
    @exclusivity(unchecked) var didRetryOnFreshConnection = false
    /// Whether libcurl's decoding was turned off for a response whose `Content-Encoding` names a coding it
    /// can't decode (the body then comes as sent); the handle's options no longer match its profile. Loop
    /// thread only.
    @exclusivity(unchecked) var passesEncodedBody = false
    /// Whether the current final head (status 200 or more) has ended: a line that follows is a trailer, unless it
    /// starts another head. Loop thread only.
    @exclusivity(unchecked) var finalHeadEnded = false
    /// What libcurl's informational text said of the request's HTTP/2 stream and a GOAWAY on its connection,
    /// for a request that is sent again after a refusal alone (see ``watchesGoawayRefusal``). Loop thread only.
    @exclusivity(unchecked) var goawayWatch = GoawayRefusalWatch()
    /// Whether a server refused the request unprocessed with a GOAWAY and it was not sent again, its body being
    /// a stream: the transfer then fails with an error that says so. Loop thread only.
    @exclusivity(unchecked) var refusedRequestWasNotResent = false
    /// How many times the request went out (libcurl's pre-request callback) since the last response head began,
    /// or since the transfer was added to the multi handle. Loop thread only.
    @exclusivity(unchecked) var sendsWithoutAnswer = 0
    /// Whether libcurl was about to send the request again after a connection ended unanswered, and the
    /// request was stopped instead (see ``mayBeSentAgainUnanswered``). Loop thread only.
    @exclusivity(unchecked) var unansweredRequestWasNotResent = false

    /// Whether the request last went out on an HTTP/1.x connection: one its settings allow no other version on,
    /// or one a response came on in that version. Loop thread only.
    @exclusivity(unchecked) var lastSendWentOverHTTP1 = false

    /// Whether the request can go out over HTTP/1.x alone: HTTP/1.1 asked for, or cleartext without an upgrade.
    var speaksHTTP1Only: Bool {
        request.httpVersion == .http1_1 || (request.httpVersion == .automatic && !isOverTLS)
    }

    /// Whether the request may go out again after a connection ended before any answer to it: its method is
    /// idempotent, or the server refused its HTTP/2 stream unprocessed (``GoawayRefusalWatch``). Loop thread only.
    var mayBeSentAgainUnanswered: Bool {
        Self.idempotentMethods.contains(request.method.uppercased()) || goawayWatch.resendFollowsRefusal
    }
    /// How long, in nanoseconds, no byte may move before the transfer fails with `timedOut` (the request
    /// timeout), made once for the multi handle's idle check; `nil` for none.
    let idleTimeout: UInt64?
    /// The resource timeout in nanoseconds, `nil` for none: curl's own (`CURLOPT_TIMEOUT_MS`) ends the transfer
    /// while it is in curl; this one a parked transfer's (``isParked``). Counted from ``firstAddedAt``.
    let resourceTimeout: UInt64?
    /// Whether a response head's status line came and its blank line has not: a line that looks like a status
    /// line then is none. Loop thread only.
    @exclusivity(unchecked) var isInHead = false
    /// Whether another head may follow the one that ended on this transfer: one libcurl answers itself by sending
    /// the request again brings the next — a `401` with the request's credential, a `407`, or a `417` to a
    /// request that asked for `100 Continue` (libcurl sends it again without the expectation). Loop thread only.
    var mayReceiveAnotherHead: Bool {
        switch responseStatus {
        case 401: request.credential != nil
        case 407: true
        case 417: request.headers.values(for: "Expect").contains { $0.lowercased().contains("100-continue") }
        default: false
        }
    }
    /// When the transfer first joined its multi handle, on ``ActivityClock``. Loop thread only.
    @exclusivity(unchecked) var firstAddedAt: UInt64 = 0
    package let startDate = Date()
    /// ``startDate`` on a clock that a change of the system's time doesn't move, for durations.
    let startInstant = ContinuousClock.now
    /// Seconds from ``startDate`` to the attempt libcurl measured, when the handle was added to curl again (a
    /// request sent again on a fresh connection, a parked transfer resumed: `noteAttemptStart()`): libcurl's times
    /// count from that attempt. Loop thread only.
    @exclusivity(unchecked) var earlierAttemptTime: TimeInterval = 0
    /// When the transfer was last added to its multi handle, on ``QueueClock``; 0 before. Loop thread only.
    @exclusivity(unchecked) var addedAt: UInt64 = 0
    /// When the first response line reached the header callback, on ``QueueClock``; 0 before. Loop thread only.
    @exclusivity(unchecked) var firstResponseLineAt: UInt64 = 0
    /// The pool's record of connections, while the transfer is in the pool; `nil` before and after. Loop
    /// thread only.
    @exclusivity(unchecked) var connections: ConnectionTracker?
    /// The socket of the connection the transfer is on, from when it has one until it leaves the pool or the
    /// connection closes (``ConnectionTracker``). Loop thread only.
    @exclusivity(unchecked) var connectionSocket: curl_socket_t?
    /// The number of the last connection the transfer was on, kept after it left it, for its metrics. Loop
    /// thread only.
    @exclusivity(unchecked) var connectionNumber: Int?

    package init(request: consuming TransferRequest, delegate: any TransferDelegate) {
        self.delegate = delegate
        self.idleTimeout = request.requestTimeout > 0 ? ActivityClock.nanoseconds(request.requestTimeout) : nil
        self.resourceTimeout =
            request.resourceTimeout > 0 && request.resourceTimeout.isFinite
            ? ActivityClock.nanoseconds(request.resourceTimeout) : nil
        if case .memory = request.sink { collectsBodyInMemory = true } else { collectsBodyInMemory = false }
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        // Last: the request moves in rather than being copied.
        self.request = request
    }

    deinit {
        if let easyHandle { curl_easy_cleanup(easyHandle) }
        errorBuffer.deallocate()
    }

    /// The error of a parked transfer whose resource timeout passed.
    var resourceTimeoutError: TransferError {
        TransferError(
            .timedOut, "The request did not finish within \(request.resourceTimeout) seconds.", url: request.url)
    }

    /// The error of a transfer no byte moved for within its idle timeout.
    var idleTimeoutError: TransferError {
        TransferError(.timedOut, "No data moved for \(request.requestTimeout) seconds.", url: request.url)
    }

    /// The error of a transfer that waited for a connection for its idle timeout while no transfer of its pool
    /// had one.
    var connectionTimeoutError: TransferError {
        TransferError(
            .timedOut, "No connection was made for \(request.requestTimeout) seconds.", url: request.url)
    }

    // MARK: - pause

    /// Pauses receiving and sending. Loop thread only.
    func pause() {
        guard case .pauseCurl = machine.pause(), let easyHandle else { return }
        let accepted = curl_easy_pause(easyHandle, CURLPAUSE_ALL) == CURLE_OK
        machine.didTryPause(accepted: accepted)
        if !accepted {
            // Refused before a connection exists: the machine keeps the pause pending for the next callback,
            // and the progress callback, off otherwise, is turned on to try again as soon as curl runs the
            // transfer (libcurl reads the option at each progress update).
            herald_easy_setopt_long(easyHandle, CURLOPT_NOPROGRESS, 0)
        }
    }

    /// Continues a paused transfer where it stopped. Loop thread only.
    ///
    /// Unpausing passes buffered data to the write callback synchronously, inside `curl_easy_pause`, so the write callback
    /// runs before this returns.
    /// - Returns: The error that must end the transfer when continuing failed (see ``perform(_:)``).
    func unpause() -> TransferError? {
        // Time spent suspended is no silence: the idle timeout counts from the resume.
        lastActivity = ActivityClock.now
        return perform(machine.unpause())
    }

    /// A streamed body's consumer drained below its low watermark: continues a transfer its write callback
    /// paused for it, unless the user paused it meanwhile.
    /// - Returns: The error that must end the transfer when continuing failed.
    func consumerDidDrain() -> TransferError? {
        perform(machine.consumerDidDrain())
    }

    // MARK: - response disposition

    /// The task allowed the response: continue (unless the user suspended the task meanwhile — then their
    /// resume continues it). Loop thread only, outside curl callbacks.
    /// - Returns: The error that must end the transfer when continuing failed.
    func allowResponse() -> TransferError? {
        perform(machine.allowResponse())
    }

    /// The task became a download: the body goes to `sink` and `delegate` hears about it from now on.
    /// Returns the error that must end the transfer when the sink can't be opened. Loop thread only.
    func becomeDownload(sink newSink: TransferSink, delegate newDelegate: any TransferDelegate) -> TransferError? {
        guard machine.isAwaitingDisposition else { return nil }
        do throws(TransferError) {
            sink = try newSink.open()
        } catch {
            return error
        }
        collectsBodyInMemory = false
        delegate = newDelegate
        return allowResponse()
    }

    /// Whether curl is done with the transfer but its completion is held for the task's answer or the
    /// user's resume. Loop thread only.
    var isHoldingResult: Bool { machine.isHoldingResult }

    /// Carries out what the machine answered to a resume or to the task's answer; returns the error that must
    /// end the transfer when continuing it failed.
    ///
    /// Continuing hands curl's kept data to the write callback from inside `curl_easy_pause`. When that write
    /// fails (a callback of ours aborted: the response is over its size limit, a file can't be written), curl
    /// 7.88 returns the error at once without scheduling the transfer again, and it has stopped watching the
    /// socket while paused: nothing would ever drive it to its end. So the owner removes it with the error.
    private func perform(_ action: TransferStateMachine.ContinueAction) -> TransferError? {
        switch action {
        case .none:
            return nil
        case .continueCurl:
            guard let easyHandle else { return nil }
            lastActivity = ActivityClock.now
            // The machine is already running: the write callback curl calls from in here sees that.
            let code = curl_easy_pause(easyHandle, CURLPAUSE_CONT)
            if let abort = machine.abortError { return abort }
            // Only the write failing inside the unpause strands the transfer; any other answer leaves it where
            // curl's own result will end it.
            guard code == CURLE_WRITE_ERROR else { return nil }
            return TransferError.fromCurl(
                code, osErrno: 0, errorBuffer: "", url: request.url,
                stage: response == nil ? .sending : .receivingResponse)
        case .finishHeldResult:
            // Held only when curl succeeded, with no abort of ours and no body begun.
            handOverOutcome(error: nil, sinkDidBegin: false)
            return nil
        }
    }

    // MARK: - finishing

    /// Ends the transfer with curl's result. Loop thread only, outside curl callbacks.
    func finish(result: CURLcode) {
        let needsDisposition =
            result == CURLE_OK && request.asksForResponseDisposition
            && request.asksForDisposition(status: responseStatus, headers: responseHeaders)
        switch machine.curlDidFinish(needsDisposition: needsDisposition) {
        case .none, .hold:
            return
        case .holdAndAskDelegate:
            if response == nil { response = makeResponse() }
            if let response { delegate.transferNeedsResponseDisposition(response, transfer: self) }
        case .fail(let abortError):
            handOverOutcome(error: abortError, sinkDidBegin: false)
        case .finish(let sinkDidBegin):
            handOverOutcome(error: result == CURLE_OK ? nil : error(for: result), sinkDidBegin: sinkDidBegin)
        }
    }

    /// The error for a transfer curl ended with `result`, which is not `CURLE_OK`.
    private func error(for result: CURLcode) -> TransferError {
        var osErrno: Int = 0
        if let easyHandle { herald_easy_getinfo_long(easyHandle, CURLINFO_OS_ERRNO, &osErrno) }
        let text = String(cString: errorBuffer)
        if unansweredRequestWasNotResent {
            return TransferError(
                .networkConnectionLost,
                "The connection ended before any answer to the request, which was not sent again: the server may "
                    + "have received it whole, and a request whose method is not idempotent is never made twice.",
                curlCode: Int32(result.rawValue), curlMessage: text, url: request.url)
        } else if refusedRequestWasNotResent {
            return TransferError(
                .bodyStream,
                "The server shut the HTTP/2 connection down (GOAWAY) before processing the request, which was not "
                    + "sent again: a request whose method is not idempotent is sent again only with a body that "
                    + "can be read again from its first byte at once (data or a file), and its body is a stream.",
                curlCode: Int32(result.rawValue), curlMessage: text, url: request.url)
        } else if let refusal = tunnelRefusal(result: result, errorText: text) {
            return refusal
        } else if let proxyFailure = untrustedProxyError(result: result, errorText: text) {
            return proxyFailure
        } else if let oversized = oversizedHeadError(result: result, errorText: text) {
            return oversized
        } else if result == CURLE_UNSUPPORTED_PROTOCOL, requestWasSent {
            // curl reports a malformed status line as an unsupported protocol: no status line at all
            // ("HTTP/0.9"), an unknown version (`HTTP/9.9`), a code that is not three digits
            // (`HTTP/1.1 abc`, `HTTP/1.1 20`). The URL's scheme was checked before the transfer started and
            // the request went out, so it is the server's answer that is at fault.
            return TransferError(
                .badServerResponse, "The server's status line is malformed or not HTTP.",
                curlCode: Int32(result.rawValue), curlMessage: text, url: request.url)
        } else if result == CURLE_GOT_NOTHING, request.httpVersion == .http2PriorKnowledge, responseStatus == 0 {
            // An HTTP/1.1 server closes a connection that opens with HTTP/2's preface, without a word.
            return TransferError(
                .badServerResponse,
                "The server closed the connection without an HTTP/2 answer: with prior knowledge, it must speak "
                    + "HTTP/2 in cleartext (h2c).", curlCode: Int32(result.rawValue), curlMessage: text,
                url: request.url)
        }
        let stage: CurlErrorMapping.Stage =
            responseStatus != 0 ? .receivingResponse : requestWasSent ? .awaitingResponse : .sending
        var error = TransferError.fromCurl(
            result, osErrno: Int32(truncatingIfNeeded: osErrno), errorBuffer: text, url: request.url, stage: stage,
            connected: madeConnection)
        if result == CURLE_PEER_FAILED_VERIFICATION, CurlFeatures.usesOpenSSL, let easyHandle {
            var verifyResult = 0
            herald_easy_getinfo_long(easyHandle, CURLINFO_SSL_VERIFYRESULT, &verifyResult)
            if let problem = TransferError.CertificateProblem(verifyResult: verifyResult, curlMessage: text) {
                error.certificateProblem = problem
                error.message = problem.explanation
            }
        }
        return error
    }

    /// The error for a transfer whose proxy refused the tunnel (`CONNECT`) to an `https` server, if that is
    /// what ended it: ``TransferError/Code/authentication`` for a `407` (no credential, or a wrong one), else
    /// ``TransferError/Code/proxy``, with the proxy's status. libcurl reports either as a receive error
    /// (`CURLE_RECV_ERROR`), which would read as a lost connection, and be tried again, to no avail.
    private func tunnelRefusal(result: CURLcode, errorText: String) -> TransferError? {
        // A refused CONNECT is a receive error; anything else (a timeout during proxy authentication) is itself.
        guard result == CURLE_RECV_ERROR, let easyHandle else { return nil }
        var status = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_HTTP_CONNECTCODE, &status)
        guard status != 0, !(200..<300).contains(status) else { return nil }
        let why = status == 407 ? " (it wants a credential, or refused the one given)" : ""
        return TransferError(
            status == 407 ? .authentication : .proxy,
            "The proxy refused to open a tunnel to the server: it answered \(status)\(why).",
            curlCode: Int32(result.rawValue), curlMessage: errorText, url: request.url, statusCode: status)
    }

    /// Whether curl sent the request (any request bytes), so that a failure is about the server's answer.
    private var requestWasSent: Bool {
        guard let easyHandle else { return false }
        var requestBytes = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_REQUEST_SIZE, &requestBytes)
        return requestBytes > 0
    }

    /// The error for a transfer whose HTTPS proxy presented a certificate that failed verification, if that is
    /// what `result` is: libcurl reports it as it reports the server's (`CURLE_PEER_FAILED_VERIFICATION`), but the
    /// session's security policy is not what trusts a proxy, so it is the proxy's failure. Read from
    /// `CURLINFO_PROXY_SSL_VERIFYRESULT`, which only a failed check of the proxy's certificate sets.
    private func untrustedProxyError(result: CURLcode, errorText: String) -> TransferError? {
        guard result == CURLE_PEER_FAILED_VERIFICATION || result == CURLE_SSL_CONNECT_ERROR, CurlFeatures.usesOpenSSL,
            request.proxy?.url.lowercased().hasPrefix("https://") == true || proxyFromEnvironment, let easyHandle
        else { return nil }
        // OpenSSL's libcurl sets the proxy's result to "unspecified" (1) as its handshake starts, and to the real
        // one when it completes: not 0 means the failure was in the proxy's handshake, not the server's.
        var proxyResult = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_PROXY_SSL_VERIFYRESULT, &proxyResult)
        guard proxyResult != 0 else { return nil }
        if result == CURLE_SSL_CONNECT_ERROR {
            return TransferError(
                .proxy,
                "The TLS handshake with the HTTPS proxy failed: it may not speak TLS on that port (an HTTP proxy "
                    + "is Proxy.Kind.http), or it offers no version or cipher this libcurl takes.",
                curlCode: Int32(result.rawValue), curlMessage: errorText, url: request.url)
        }
        return TransferError(
            .proxy,
            "The HTTPS proxy's certificate is not trusted (OpenSSL verification result \(proxyResult)). The "
                + "session's security policy trusts servers, not the proxy: the system's trust store does.",
            curlCode: Int32(result.rawValue), curlMessage: errorText, url: request.url)
    }

    /// Whether the transfer connected: a connection counted, or its TCP connect timed. (One it reused shows
    /// in the stage: its request went out.) libcurl resets these for each transfer, unlike the OS errno.
    private var madeConnection: Bool {
        guard let easyHandle else { return false }
        var connects = 0
        var connectTime: curl_off_t = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_NUM_CONNECTS, &connects)
        herald_easy_getinfo_off(easyHandle, CURLINFO_CONNECT_TIME_T, &connectTime)
        return connects > 0 || connectTime > 0
    }

    /// Ends the transfer with an error of ours (cancelled, invalid, …). Loop thread only.
    func finish(error: TransferError) {
        guard case .finish(let sinkDidBegin) = machine.finish() else { return }
        handOverOutcome(error: error, sinkDidBegin: sinkDidBegin)
    }

    /// Whether `response` leads to another transfer (a redirect, a challenge the task answers) while the body
    /// goes to a file: the file, which may hold a download's first part, is left as it is.
    func isHopIntoFile(_ response: ResponseHead) -> Bool {
        guard case .file = request.sink else { return false }
        return request.leadsToNextHop(status: response.statusCode, headers: response.headers)
    }

    /// Whether libcurl decoded `response`'s body before the sink saw it: it names a coding other than `identity`,
    /// each of which libcurl decodes (one it can't is passed as sent; see `headDidEnd`). Only for a transfer that
    /// ``decodesContent``.
    func decodesBody(of response: ResponseHead) -> Bool {
        let values = response.headers.values(for: "Content-Encoding")
        guard CurlFeatures.codings(in: values).contains(where: { $0 != "identity" }) else { return false }
        return !CurlFeatures.passesUndecodableBodies || CurlFeatures.decodesEvery(contentCoding: values)
    }

    /// Hands the outcome to the delegate's ``TransferDelegate/proceed(after:)``, here on the loop thread. The
    /// machine has just moved to `finished`, which it does once.
    private func handOverOutcome(error: TransferError?, sinkDidBegin: Bool) {
        var error = error
        if response == nil, responseStatus >= 200 {
            response = makeResponse()
        }
        if error == nil, let response, !sinkDidBegin, !isHopIntoFile(response),
            let failure = beginSink(for: response)
        {
            // A final response with an empty body still replaces what an earlier one (or a partial
            // file that the server declined to resume) left in the sink.
            error = failure
        }
        if error == nil, let shortfall = sink.shortfall { error = shortfall }
        var body = Data()
        do {
            body = try sink.finish()
        } catch let failure {
            if error == nil { error = failure }
        }
        var file = sink.file
        if decodesContent, file != nil, let response { file?.holdsDecodedBody = decodesBody(of: response) }
        // A streamed body's reader stops reading ahead.
        source?.stopReading()
        // Out of the multi handle by now (or never in it), so the metrics can be read and the handle reused.
        // Only a transfer curl finished normally leaves its handle fit for another: after a failure curl may
        // still hold state that `curl_easy_reset` keeps (its receive buffer, after a failed connect), and
        // then refuses options on it. A handle set to open a fresh connection would keep doing so: it is not
        // used again either.
        var metrics: TransferTimings?
        if let easyHandle {
            metrics = TransferTimings(
                easyHandle: easyHandle, startDate: startDate, addedAt: addedAt, firstResponseLineAt: firstResponseLineAt
            )
            metrics?.connectionIdentifier = connectionNumber
            if earlierAttemptTime > 0 { metrics?.moveLater(by: earlierAttemptTime) }
            if error == nil, !didRetryOnFreshConnection, let pool {
                // A handle whose decoding was turned off is reset before its next transfer.
                pool.give(easyHandle, profile: passesEncodedBody ? nil : profile)
            } else {
                curl_easy_cleanup(easyHandle)
            }
            self.easyHandle = nil
        }
        delegate.proceed(
            after: TransferOutcome(response: response, body: body, file: file, error: error, metrics: metrics))
    }

    /// Tells the sink a response body starts; returns the error that must stop the transfer, if any.
    func beginSink(for response: ResponseHead) -> TransferError? {
        machine.sinkDidBeginResponse()
        // The declared length, never more than the response size limit (each sink decides how far to trust
        // it: the memory sink starts no larger than 64 MiB, the file sink reserves a step at a time).
        let limit = request.maximumResponseSize > 0 ? Int64(request.maximumResponseSize) : Int64.max
        let sizeHint = expectedBodyLength.map { min($0, limit) }
        switch sink.begin(response: response, declaredLength: sizeHint) {
        case .success(let offset):
            // A continued body ends at its offset plus the declared length: a length no file can reach from
            // there is the server's error, not a number to wrap around.
            if let declared = expectedBodyLength, offset.addingReportingOverflow(declared).overflow {
                return TransferError(
                    .badServerResponse,
                    "The response declares \(declared) body bytes after byte \(offset), beyond any file's size.",
                    url: request.url)
            }
            bodyStartOffset = offset
            // A file already whole (a 416 naming its length) ends where it is; the answer's body goes nowhere.
            let isWhole = sink.file?.wasAlreadyComplete == true
            bodyGoesNowhere = isWhole
            // A redirect's or a challenge's body, kept in memory in case the task takes it for its answer, is no
            // body of the task's: its progress waits for the next hop's.
            if !request.leadsToNextHop(status: response.statusCode, headers: response.headers) {
                delegate.transferDidBeginBody(
                    at: offset, expected: isWhole ? offset : reportedBodyLength.map { offset + $0 })
            }
            return nil
        case .failure(let error):
            return error
        }
    }

    /// The response head received so far. Its URL is the request's as libcurl writes it back (an empty path
    /// as `/`, dot segments removed; see ``ParsedURL/effectiveURL``), found when the URL was parsed: curl
    /// follows no redirect (Herald follows them itself, each hop a transfer of its own), so there is nothing
    /// to ask curl.
    func makeResponse() -> ResponseHead {
        ResponseHead(
            url: parsedURL?.effectiveURL ?? request.url, statusCode: responseStatus, headers: responseHeaders,
            httpVersion: responseVersion)
    }
}
