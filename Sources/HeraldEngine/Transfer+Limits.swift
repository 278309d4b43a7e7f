import CCurl
import Foundation

// The limits that protect the process from a server: the size of a body held in memory and of a
// response head. Each check runs inside a curl callback on the loop thread; past a limit it records
// why with the state machine's `abort(with:)` and the callback returns 0, which makes curl stop the
// transfer (CURLE_WRITE_ERROR) and `finish(result:)` report the recorded error instead of curl's.
extension Transfer {
    /// Whether `length` more body bytes would take an in-memory body past
    /// ``TransferRequest/maximumResponseSize``. When they would, records ``TransferError/Code/responseTooLarge``
    /// and releases what was collected so far.
    func exceedsResponseLimit(adding length: Int) -> Bool {
        let limit = Int64(request.maximumResponseSize)
        guard limit > 0, collectsBodyInMemory else { return false }
        var reason: String?
        if bodyBytesReceived + Int64(length) > limit {
            reason = "The response body grew past the maximum of \(limit) bytes."
        } else if bodyBytesReceived == 0, let declared = expectedBodyLength, declared > limit, let response,
            response.headers["Content-Encoding"] == nil
        {
            // Refuse at the first byte what can't fit rather than receive `limit` bytes first. Only for
            // an unencoded body: a declared compressed length says nothing certain about the decoded one.
            reason = "The response declares \(declared) bytes, more than the maximum of \(limit)."
        }
        guard let reason else { return false }
        machine.abort(with: TransferError(.responseTooLarge, reason, url: request.url))
        // The body is discarded, not handed to the caller: free it now rather than when the task ends.
        sink = MemoryBodySink()
        return true
    }

    /// Counts a header line of `length` bytes against ``TransferRequest/maximumHeaderSize``; whether the
    /// current response head is now past it, in which case ``TransferError/Code/badServerResponse`` is recorded.
    /// `headerBytesReceived` restarts at every status line (see `receivedHeaderLine`).
    func exceedsHeaderLimit(adding length: Int) -> Bool {
        headerBytesReceived += length
        let limit = request.maximumHeaderSize
        guard limit > 0, headerBytesReceived > limit, machine.abortError == nil else { return false }
        machine.abort(
            with: TransferError(
                .badServerResponse, "The response head is larger than the maximum of \(limit) bytes.",
                url: request.url))
        return true
    }

    /// The error for a transfer that libcurl itself stopped because a response head was too large, if that is
    /// what `result` and the error text say; `nil` otherwise.
    ///
    /// libcurl 7.88 refuses a single header line over `CURL_MAX_HTTP_HEADER` (100 KiB) with
    /// `CURLE_OUT_OF_MEMORY` and an empty error buffer, and (with the CVE-2023-38039 fix that Debian backports)
    /// a head over 300 KiB with `CURLE_RECV_ERROR` and "Too large response headers". Over HTTP/2 its header
    /// callback refuses a head of about 128 KiB, which nghttp2 reports as its callback failing (`-902`), again
    /// as `CURLE_RECV_ERROR`, before any status. None is a network failure or a lack of memory: the server sent
    /// a head no client should accept.
    func oversizedHeadError(result: CURLcode, errorText: String) -> TransferError? {
        let isOversizedLine = result == CURLE_OUT_OF_MEMORY && response == nil && bodyBytesReceived == 0
        let isOversizedHead =
            result == CURLE_RECV_ERROR
            && (errorText.contains("Too large response headers")
                || (response == nil && errorText.contains("nghttp2_session_mem_recv() returned -902")))
        guard isOversizedLine || isOversizedHead else { return nil }
        return TransferError(
            .badServerResponse, "The response head is larger than libcurl accepts.", curlCode: Int32(result.rawValue),
            curlMessage: errorText.isEmpty ? String(cString: curl_easy_strerror(result)) : errorText,
            url: request.url)
    }
}
