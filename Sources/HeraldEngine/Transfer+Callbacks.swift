import CCurl
import Foundation

// curl's callbacks. Each runs on the loop thread, inside a curl call, so none of them may call
// `curl_multi_*`; they record what happened and return. `userdata` is the transfer, kept alive by its
// multi handle while curl can call back.
extension Transfer {
    /// Runs `body` with the transfer `userdata` points to, borrowed without a retain. Safe because its multi
    /// handle holds it while curl can call back, and lets it go only on the loop thread outside any curl
    /// call: a callback can't outlive it. libcurl calls the progress callback about ten times per request
    /// and the header callback once per line, so a retain and a release each time would add up.
    @inline(__always)
    private static func borrowing<Result>(_ userdata: UnsafeMutableRawPointer, _ body: (Transfer) -> Result) -> Result {
        Unmanaged<Transfer>.fromOpaque(userdata)._withUnsafeGuaranteedRef(body)
    }

    static let writeCallback: herald_curl_data_cb = { buffer, size, count, userdata in
        guard let userdata else { return 0 }
        return borrowing(userdata) { $0.received(buffer, length: size * count) }
    }

    static let headerCallback: herald_curl_data_cb = { buffer, size, count, userdata in
        guard let userdata else { return 0 }
        let length = size * count
        guard let buffer else { return length }
        return borrowing(userdata) { transfer in
            // A line after the final response's head ended, other than the status line of another head (after a
            // 401, 407 or 417 libcurl answers itself: `mayReceiveAnotherHead`), is a trailer of a chunked body:
            // neither a field of the head, nor counted against the head's limit; an empty body's trailers come
            // before any body byte. A trailer that starts as a status line is a trailer all the same when no such
            // head can follow.
            if transfer.finalHeadEnded || (transfer.machine.sinkDidBegin && transfer.response != nil),
                !(transfer.mayReceiveAnotherHead
                    && ResponseHeadLine.startsStatusLine(UnsafeRawBufferPointer(start: buffer, count: length)))
            {
                return length
            }
            transfer.receivedHeaderLine(UnsafeRawBufferPointer(start: buffer, count: length))
            // Past the head's limit, or a head the line showed to be unusable: curl stops, with the error recorded.
            return transfer.exceedsHeaderLimit(adding: length) || transfer.machine.abortError != nil ? 0 : length
        }
    }

    static let readCallback: herald_curl_data_cb = { buffer, size, count, userdata in
        guard let userdata, let buffer else { return Int(herald_readfunc_abort) }
        return borrowing(userdata) { $0.fillBody(buffer, capacity: size * count) }
    }

    static let seekCallback: herald_curl_seek_cb = { userdata, offset, origin in
        guard let userdata else { return CURL_SEEKFUNC_FAIL }
        return borrowing(userdata) { $0.rewindBody(to: offset, origin: origin) }
    }

    static let progressCallback: herald_curl_xferinfo_cb = { userdata, _, _, _, _ in
        guard let userdata else { return 1 }
        return borrowing(userdata) { $0.progressTick() }
    }

    // MARK: - receiving

    private func received(_ buffer: UnsafeMutablePointer<CChar>?, length: Int) -> Int {
        switch machine.callbackDidRun() {
        case .abort: return 0
        case .pause: return Int(herald_writefunc_pause)
        case .proceed: break
        }
        lastActivity = ActivityClock.now
        if response == nil {
            announceResponse()
        }
        if request.asksForResponseDisposition, let response,
            request.asksForDisposition(status: response.statusCode, headers: response.headers)
        {
            switch machine.responseNeedsDisposition() {
            case .askDelegate:
                delegate.transferNeedsResponseDisposition(response, transfer: self)
                return Int(herald_writefunc_pause)
            case .keepWaiting:
                return Int(herald_writefunc_pause)
            case .proceed:
                break
            }
        }
        // A redirect or challenge the task answers with another transfer: its body is no part of the task's body,
        // nor of its progress. Asked once per chunk, for both uses below.
        let leadsToNextHop =
            response.map { request.leadsToNextHop(status: $0.statusCode, headers: $0.headers) } ?? false
        if leadsToNextHop, case .file = request.sink {
            // Nor of a file (a continued file must not take it): see `isHopIntoFile`.
            return length
        }
        if !machine.sinkDidBegin, let response, let error = beginSink(for: response) {
            machine.abort(with: error)
            return 0
        }
        if bodyGoesNowhere { return length }
        if length > 0, sink.isFull(pausing: self), machine.consumerIsBehind() {
            // A streamed body's consumer is above its high watermark: curl keeps this chunk and stops reading
            // the socket, so the sender slows down; the consumer's drain sends `resumeReceiving`.
            return Int(herald_writefunc_pause)
        }
        if exceedsResponseLimit(adding: length) { return 0 }
        if let buffer, length > 0, let error = sink.write(UnsafeRawBufferPointer(start: buffer, count: length)) {
            // Returning less than `length` makes curl stop with CURLE_WRITE_ERROR; the error says why.
            machine.abort(with: error)
            return 0
        }
        bodyBytesReceived += Int64(length)
        // In memory it is kept, in case the redirection hook declines the hop and it becomes the task's response.
        if leadsToNextHop { return length }
        if request.forwardsBodyChunks, let buffer, length > 0 {
            delegate.transferDidReceiveBody(UnsafeRawBufferPointer(start: buffer, count: length))
        }
        delegate.transferDidReceiveBytes(
            total: bodyStartOffset + bodyBytesReceived, expected: reportedBodyLength.map { bodyStartOffset + $0 })
        return length
    }

    /// Applies one header line to the response being received; `ResponseHeadLine.parse` does the parsing,
    /// straight from curl's bytes (this runs for every line of every response).
    private func receivedHeaderLine(_ raw: UnsafeRawBufferPointer) {
        lastActivity = ActivityClock.now
        if firstResponseLineAt == 0 {
            firstResponseLineAt = QueueClock.now
            if !CurlFeatures.reportsConnectionBeforeRequest { connections?.attachAtFirstResponse(self) }
        }
        switch ResponseHeadLine.parse(raw, recentValues: recentFieldValues) {
        case .statusLine where isInHead:
            // A line among a head's fields that looks like a status line: libcurl took it for a field, and no
            // head starts in the middle of another. Neither the status nor a field.
            return
        case .statusLine(let version, let statusCode):
            isInHead = true
            // A new response head: an interim 1xx, a 401 curl answers itself (Digest), or the final one.
            responseVersion = version
            responseStatus = statusCode
            // The list made with the transfer serves the first head; a later one (after an interim 1xx or a
            // 401 curl answered) gets its own, with room for a typical head's fields.
            if responseHeaders.count > 0 { responseHeaders = HeaderFields(capacity: 16) }
            contentLengthIndex = nil
            hasConflictingLengths = false
            response = nil
            expectedBodyLength = nil
            reportedBodyLength = nil
            bodyGoesNowhere = false
            // The sink is told again at the next body byte, and drops what an earlier response left.
            machine.responseHeadDidStart()
            finalHeadEnded = false
            continuedOnceUnwatched = false
            sendsWithoutAnswer = 0
            bodyBytesReceived = 0
            bodyStartOffset = 0
            headerBytesReceived = 0
        case .continuation(let more):
            // In place: copying the fields for each folded line would cost the square of the head's size, on the
            // thread every transfer shares (libcurl before 8.18 hands each folded line over on its own).
            responseHeaders.continueLastValue(with: more)
        case .field(let name, let value):
            // The common spelling is the parser's own string, and comparing a short string with it is a
            // comparison of two words; any other spelling of the name is compared ignoring case.
            if name.utf8.count == 14, name == "Content-Length" || name.caseInsensitiveEquals("Content-Length") {
                if let first = contentLengthIndex {
                    // libcurl frames the body by the last; the length reported would be the first's.
                    let declared = ResponseHead.contentLength(from: responseHeaders.fields[first].value)
                    if ResponseHead.contentLength(from: value) != declared { hasConflictingLengths = true }
                } else {
                    contentLengthIndex = responseHeaders.count
                }
            }
            responseHeaders.add(name: name, value: value)
        case .ignored:
            // The blank line that ends a head.
            guard raw.count <= 2, raw.first == 0x0D || raw.first == 0x0A else { return }
            isInHead = false
            guard responseStatus >= 200, response == nil else { return }
            guard !hasConflictingLengths else {
                // A message whose framing can't be known (RFC 9112 §6.3): an error, not a guess.
                machine.abort(
                    with: TransferError(
                        .badServerResponse, "The response has Content-Length fields with different values.",
                        url: request.url))
                return
            }
            headDidEnd()
        }
    }

    /// A head ended. A final one is the response, announced now, before any body byte (a server may send its
    /// head long before its body): the task hears of it, a `dataTaskDidReceiveResponse` hook is asked, and a
    /// streamed body's consumer gets it. The hook's answer comes back as a command; a body byte that arrives
    /// first waits for it (the write callback pauses). A 401 curl answers itself with the credential it was
    /// given (Digest's first round-trip) is not final: the next head follows on this transfer, and a 401
    /// curl gives up on reaches the write callback, which announces it then.
    private func headDidEnd() {
        finalHeadEnded = true
        if isWaitingForBody, let bodyWake {
            // The answer came while sending waited for a streamed body's reader (an early 401, 413 or 303): libcurl
            // stops sending on an error status but keeps the send direction paused, and a transfer paused that way
            // never ends. Continuing it now (a command, after this callback) lets it end with the answer, or, when
            // libcurl still sends (a 2xx, a connection it will close), pause again at the next read; on a closing
            // connection libcurl stops sending once the answer is read, and ``socketNoLongerWatched()`` continues it
            // then.
            bodyWake()
        }
        if decodesContent, CurlFeatures.passesUndecodableBodies, let easyHandle {
            // libcurl would fail the transfer at the first body byte of a coding it can't decode; such a body
            // comes as sent, its `Content-Encoding` telling the caller what it is. libcurl reads this option
            // for each piece of body it writes, so it applies from this head's first byte.
            let passes = !CurlFeatures.decodesEvery(contentCoding: responseHeaders.values(for: "Content-Encoding"))
            // Set again for each final head once turned off: the head after a Digest challenge may be decodable.
            if passes || passesEncodedBody {
                herald_easy_setopt_long(easyHandle, CURLOPT_HTTP_CONTENT_DECODING, passes ? 0 : 1)
            }
            if passes { passesEncodedBody = true }
        }
        let curlAnswersChallenge = responseStatus == 401 && request.credential != nil
        if curlAnswersChallenge, request.credential?.usesDigest == true, responseHeaders.contains("Set-Cookie") {
            // Its head is not the response, and the next one replaces it: its cookies are taken now. (Basic is sent
            // with the first request: a 401 then is final, and its cookies are taken with it, once.)
            delegate.transferDidReceiveInterimChallenge(makeResponse())
        }
        if !curlAnswersChallenge {
            announceResponse()
            if let response, request.asksForResponseDisposition,
                request.asksForDisposition(status: response.statusCode, headers: response.headers),
                case .askDelegate = machine.responseNeedsDisposition()
            {
                // No pause here: nothing of the body has come. The write callback pauses if it comes first.
                delegate.transferNeedsResponseDisposition(response, transfer: self)
            }
        }
        sink.headDidEnd { response ?? makeResponse() }
    }

    private func announceResponse() {
        let head = makeResponse()
        response = head
        // The same as `head.expectedContentLength`, without looking the field up by name.
        expectedBodyLength = contentLengthIndex.flatMap {
            ResponseHead.contentLength(from: head.headers.fields[$0].value)
        }
        // A body libcurl decodes is counted decoded: the declared (encoded) length is no total for it. A response
        // that has no body whatever its `Content-Length` says (to a `HEAD`, a `204`, a `304`) has none to count.
        if head.statusCode == 204 || head.statusCode == 304 || request.method == "HEAD" {
            reportedBodyLength = 0
        } else {
            reportedBodyLength =
                expectedBodyLength == nil || (decodesContent && decodesBody(of: head)) ? nil : expectedBodyLength
        }
        delegate.transferDidReceiveResponse(head)
    }

    // MARK: - sending

    private func fillBody(_ buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        switch machine.readCallbackDidRun() {
        case .abort: return Int(herald_readfunc_abort)
        case .pause: return Int(herald_readfunc_pause)
        case .proceed: break
        }
        guard let source else { return 0 }
        switch source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity)) {
        case .end:
            return 0
        case .wait:
            // A streamed body's reader, on its own queue, has nothing yet: curl stops calling until the reader's
            // wake unpauses sending (`bodyDidBecomeAvailable`). Nothing here waits or runs user code.
            isWaitingForBody = true
            return Int(herald_readfunc_pause)
        case .failed(let error):
            machine.abort(with: error)
            return Int(herald_readfunc_abort)
        case .bytes(let count):
            bodyBytesSent += Int64(count)
            lastActivity = ActivityClock.now
            delegate.transferDidSendBytes(Int64(count), total: bodyBytesSent, expected: source.length)
            return count
        }
    }

    private func rewindBody(to offset: Int, origin: Int32) -> Int32 {
        // curl only ever seeks from the start (SEEK_SET), to resend a body after an authentication round-trip
        // it answers itself (Digest) or a reused connection that closed. libcurl needs the answer now, inside
        // this callback: a seek callback that fails or can't seek makes the transfer fail with
        // CURLE_SEND_FAIL_REWIND, there is no "try again later" (7.88.1 `Curl_readrewind`). But it only
        // needs the *position*: the next read may still return CURL_READFUNC_PAUSE. So a streamed body
        // rewinds without running user code here: its reader drops what it read ahead and gets a fresh
        // stream (`taskNeedNewBodyStream`, a sized body's `open`) on its own queue, while the read
        // callback pauses sending until the fresh stream's first bytes arrive. A fresh stream that can't
        // be had fails the transfer from the read callback, with `bodyStream`.
        guard origin == SEEK_SET else { return CURL_SEEKFUNC_CANTSEEK }
        if let error = rewindSource(to: Int64(offset)) {
            // curl then fails with CURLE_SEND_FAIL_REWIND; the recorded error says why, clearly.
            machine.abort(with: error)
            return CURL_SEEKFUNC_CANTSEEK
        }
        return CURL_SEEKFUNC_OK
    }

    // MARK: - progress

    /// The progress callback is on only while a pause is pending (``pause()``), and ends a transfer our
    /// callbacks aborted. The idle timeout is the multi handle's (``MultiHandle/checkIdleTransfers()``).
    private func progressTick() -> Int32 {
        switch machine.progressDidTick() {
        case .abort:
            return 1
        case .tryPause:
            // curl_easy_pause may still fail here (no connection yet): the pause then stays pending for a
            // later callback.
            if let easyHandle {
                machine.didTryPause(accepted: curl_easy_pause(easyHandle, CURLPAUSE_ALL) == CURLE_OK)
            }
        case .proceed:
            break
        }
        return 0
    }
}
