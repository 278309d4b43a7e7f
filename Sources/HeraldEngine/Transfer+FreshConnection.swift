import CCurl
import Foundation

extension Transfer {
    /// Whether the transfer, which curl ended with `result`, is to be sent once more on a fresh connection; if
    /// so, it is set up for that and the caller adds its handle to the multi handle again. Loop thread only.
    ///
    /// A server may close a kept-alive connection just as a request goes out on it (its idle timeout ran
    /// out). libcurl 7.88 sends such a request again by itself in some of these cases (over HTTP/1.1, the
    /// pre-request callback lets only an idempotent one go); where it gives up instead, the transfer fails with a
    /// send or receive error although the server never saw the request through. Browsers, curl's tool,
    /// URLSession and AsyncHTTPClient send it again once, on a fresh
    /// connection, when nothing of a response arrived and sending it twice can do no harm: an idempotent
    /// method whose body, if it has one, can be read again from its first byte (data, a file, a stream that
    /// can rewind). The task sees one transfer.
    ///
    /// Over HTTP/2 the same race ends differently: a server that shuts a connection down with GOAWAY naming
    /// an earlier stream as its last, while the new request's stream is the only one open, makes libcurl 7.88
    /// fail it with `CURLE_HTTP2` (it moves a refused stream to a new connection only while others run), and a
    /// clean close with nothing answered ends it with `CURLE_PARTIAL_FILE`. Both are sent again the same way.
    ///
    /// A GOAWAY whose last stream is below the request's says the server did not process it (RFC 9113 §6.8),
    /// so such a request is sent again whatever its method, once, when libcurl's text showed the GOAWAY
    /// (``GoawayRefusalWatch``) and its body can be read again from its first byte at once: data or a file. A
    /// streamed body is not: its fresh stream comes later, off the loop thread, after the request's head
    /// would have gone out again; such a request fails with an error that says it was refused, not sent.
    func retriesOnFreshConnection(after result: CURLcode) -> Bool {
        guard !didRetryOnFreshConnection, let easyHandle, Self.staleConnectionResults.contains(result.rawValue),
            responseStatus == 0, headerBytesReceived == 0, !machine.isHoldingResult
        else { return false }
        let isIdempotent = Self.idempotentMethods.contains(request.method.uppercased())
        guard isIdempotent || goawayWatch.refusedStream else { return false }
        // No new connection made for this transfer: it ran on one a previous transfer had opened.
        var connects = 0
        herald_easy_getinfo_long(easyHandle, CURLINFO_NUM_CONNECTS, &connects)
        guard connects == 0 else { return false }
        if let body = request.body {
            if !isIdempotent, !body.rewindsAtOnce {
                refusedRequestWasNotResent = true
                return false
            }
            // The new connection reads the body through the read callback from where the source stands.
            // A stream rewinds without waiting: its reader gets a fresh stream off the loop thread.
            guard rewindSource(to: 0) == nil else { return false }
        }
        guard herald_easy_setopt_long(easyHandle, CURLOPT_FRESH_CONNECT, 1) == CURLE_OK else { return false }
        didRetryOnFreshConnection = true
        sendsWithoutAnswer = 0
        // The connection it ran on is gone; the fresh one's number comes when the request goes out on it.
        connectionNumber = nil
        hasConnection = false
        goawayWatch = GoawayRefusalWatch()
        lastActivity = ActivityClock.now
        return true
    }

    /// Notes that the transfer's handle was added to its multi handle again: for a new attempt (after
    /// ``retriesOnFreshConnection(after:)``, at once or when a suspended task resumed), or after it was parked
    /// (suspended before it had a connection). libcurl counts its times afresh from here, and the metrics count
    /// from the transfer's start: the time suspended is in `total`.
    func noteAttemptStart() {
        // On the monotonic clock, as libcurl's times are: the wall clock can run fast or slow while it is corrected.
        let elapsed = (ContinuousClock.now - startInstant).components
        earlierAttemptTime = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
    }

    /// How a request sent on a connection the server was closing fails, when nothing of a response arrived.
    private static let staleConnectionResults: Set<UInt32> = [
        CURLE_SEND_ERROR.rawValue, CURLE_RECV_ERROR.rawValue, CURLE_GOT_NOTHING.rawValue, CURLE_HTTP2.rawValue,
        CURLE_PARTIAL_FILE.rawValue,
    ]

    /// The methods RFC 9110 calls idempotent.
    package static let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]
}
