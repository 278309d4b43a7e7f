import Foundation

/// Everything the engine needs to configure one curl easy handle, captured when a task first resumes.
package struct TransferRequest: Sendable {
    package var url: URL
    package var method: String
    package var headers: HeaderFields
    package var body: TransferBody?
    /// Where the response body goes.
    package var sink: TransferSink = .memory
    /// Idle timeout: the transfer fails with `timedOut` when no byte moves for this long (0 = none).
    package var requestTimeout: TimeInterval
    /// Whole-transfer timeout, including time spent suspended (0 = none).
    package var resourceTimeout: TimeInterval
    package var httpVersion: ProtocolVersion
    /// The schemes curl may use, comma-separated (curl's `PROTOCOLS_STR` form), such as `"http,https"`.
    package var allowedProtocols: String
    package var followsRedirects: Bool
    package var maximumRedirects: Int
    /// The most body bytes collected for a `.memory` sink (0 = no limit); file sinks are not limited.
    package var maximumResponseSize: Int = 0
    /// The most bytes in one response head (0 = no limit of Herald's; curl keeps its own).
    package var maximumHeaderSize: Int = 0
    /// Whether the transfer waits, paused, for the task's answer to the final response before its body
    /// (or, without a body, its completion) — set when the session has a `dataTaskDidReceiveResponse` hook.
    package var asksForResponseDisposition = false
    /// Whether each body chunk is handed to the delegate — set when the session has a
    /// `dataTaskDidReceiveData` hook, so that without one the write callback does no extra work.
    package var forwardsBodyChunks = false
    /// Whether the request carries validators of a stale cache entry: a `304` answers the cache, not the
    /// task, so it is not presented for a disposition.
    package var revalidatesCachedResponse = false
    /// The credential libcurl answers the server's challenge with (`CURLOPT_USERNAME`/`PASSWORD` and
    /// `HTTPAUTH`), set by an authentication round-trip; dropped on a hop to another origin.
    package var credential: TransferCredential?
    /// The `Cookie` field from the session's cookie store for this hop's URL, sent unless `headers` has a
    /// `Cookie` of the caller's.
    package var cookieHeader: String?
    /// Whether the task may answer a 401's Basic or Digest challenge (a challenge hook is set, or the session's
    /// credential store has a credential for the host): such a 401 is then not presented to the task's
    /// disposition and body hooks, nor written to a download's file. Set only for a task with those hooks or a
    /// file.
    package var answersChallenges = false
    /// The session's explicit proxy; `nil` leaves libcurl to its environment variables.
    package var proxy: ProxySettings?

    /// Whether a final response with `status` waits for the task's disposition. A redirect Herald is
    /// about to follow is not final: it is not presented (as URLSession presents only the last response).
    package func asksForDisposition(status: Int, headers: HeaderFields) -> Bool {
        asksForResponseDisposition && status >= 200 && !(revalidatesCachedResponse && status == 304)
            && !leadsToNextHop(status: status, headers: headers)
    }

    /// Whether a response with `status` and `headers` is one Herald follows with another transfer (a
    /// redirect, a Basic or Digest challenge when ``answersChallenges``), so it is not presented and its body
    /// is not the task's and is not forwarded to body hooks.
    package func leadsToNextHop(status: Int, headers: HeaderFields) -> Bool {
        if status == 401 {
            // Most 401s are the task's result (no credential), and hooks must see those.
            return answersChallenges && Self.offersBasicOrDigest(headers)
        }
        return followsRedirects && ResponseHead.isRedirect(status: status) && Self.hasLocation(headers["Location"])
    }

    /// Whether a redirect's `Location` value names somewhere to go: present and not blank. A 3xx with an empty
    /// `Location` (a misconfigured server) is the task's response, as libcurl and URLSession take it.
    package static func hasLocation(_ value: String?) -> Bool {
        guard let value else { return false }
        return value.contains { $0 != " " && $0 != "\t" }
    }

    /// Whether a `WWW-Authenticate` field names the Basic or Digest scheme: a scheme token starts the value or
    /// follows a comma (a parameter's quoted value may hold those words too; such a 401 is hidden for nothing).
    static func offersBasicOrDigest(_ headers: HeaderFields) -> Bool {
        for value in headers.values(for: "WWW-Authenticate") {
            for part in value.split(separator: ",") {
                let token = part.drop { $0 == " " || $0 == "\t" }.prefix { $0 != " " && $0 != "\t" && $0 != "=" }
                let scheme = token.lowercased()
                if scheme == "basic" || scheme == "digest" { return true }
            }
        }
        return false
    }
    /// Which servers' certificates to trust (see `Transfer+Security.swift`).
    package var trust: TrustSettings = .system

    /// Creates a request; what isn't given here starts empty or off.
    package init(
        url: URL, method: String, headers: HeaderFields, body: TransferBody?, sink: TransferSink = .memory,
        requestTimeout: TimeInterval, resourceTimeout: TimeInterval, httpVersion: ProtocolVersion,
        allowedProtocols: String, followsRedirects: Bool, maximumRedirects: Int, maximumResponseSize: Int = 0,
        maximumHeaderSize: Int = 0, trust: TrustSettings = .system
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.sink = sink
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        self.httpVersion = httpVersion
        self.allowedProtocols = allowedProtocols
        self.followsRedirects = followsRedirects
        self.maximumRedirects = maximumRedirects
        self.maximumResponseSize = maximumResponseSize
        self.maximumHeaderSize = maximumHeaderSize
        self.trust = trust
    }
}

/// What the engine tells the task that owns a transfer. Called on the engine's loop thread.
package protocol TransferDelegate: AnyObject, Sendable {
    /// The response head arrived: this transfer's last one (a redirect or a 401 that Herald answers ends
    /// the transfer; the next hop is a new one).
    func transferDidReceiveResponse(_ response: ResponseHead)
    /// The sink took the final response's body, which starts at `offset` of the representation (a continued
    /// download's partial file length, else 0); `expected` is where it is declared to end, when known. Not for
    /// a response that leads to another hop, nor one the sink refused.
    func transferDidBeginBody(at offset: Int64, expected: Int64?)
    /// Body bytes arrived; `expected` is the declared total when known.
    func transferDidReceiveBytes(total received: Int64, expected: Int64?)
    /// The final response head arrived and the transfer is paused until ``Transfer/allowResponse()``,
    /// ``Transfer/becomeDownload(sink:delegate:)`` or a removal answers it (only when
    /// ``TransferRequest/asksForResponseDisposition``).
    func transferNeedsResponseDisposition(_ response: ResponseHead, transfer: Transfer)
    /// A `401` libcurl answers itself on this transfer (Digest's first round-trip) arrived with `Set-Cookie`;
    /// the next head follows on this transfer. For its cookies, which no other head carries: inside the header
    /// callback, so no waiting and no libcurl call.
    func transferDidReceiveInterimChallenge(_ response: ResponseHead)
    /// Body bytes arrived, exactly as stored (only when ``TransferRequest/forwardsBodyChunks``); valid
    /// during the call only.
    func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer)
    /// `count` request body bytes were sent, making `sent` since the body (re)started; `expected` is the body's
    /// length when known.
    func transferDidSendBytes(_ count: Int64, total sent: Int64, expected: Int64?)
    /// What follows the transfer's end (cookies, the next hop, a retry, completing the task), exactly once
    /// per transfer, on the loop thread, whatever the outcome and however many transfers are in flight. It
    /// must run no user code and never wait: a hook or a handler it needs goes to a queue of its own.
    func proceed(after outcome: TransferOutcome)
}

extension TransferDelegate {
    /// Does nothing: a delegate that keeps no cookies has nothing to take from an interim challenge.
    package func transferDidReceiveInterimChallenge(_ response: ResponseHead) {}
}

/// How a transfer ended: made once on the loop thread and handed to ``TransferDelegate/proceed(after:)``, which
/// turns it into the task's values.
package struct TransferOutcome: Sendable {
    /// The last response head, when one arrived.
    package var response: ResponseHead?
    /// The body collected in memory; empty for downloads and streamed bodies.
    package var body: Data
    /// The file the body was written to, for downloads.
    package var file: DownloadedFile?
    /// Why the transfer failed; `nil` when it succeeded.
    package var error: TransferError?
    /// What libcurl measured, when the transfer had an easy handle.
    package var metrics: TransferTimings?

    /// Creates an outcome.
    package init(
        response: ResponseHead?, body: Data, file: DownloadedFile? = nil, error: TransferError?,
        metrics: TransferTimings?
    ) {
        self.response = response
        self.body = body
        self.file = file
        self.error = error
        self.metrics = metrics
    }
}
