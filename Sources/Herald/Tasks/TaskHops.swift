import Foundation

/// What a task remembers across the transfers it runs for one request: redirects Herald follows by hand,
/// authentication round-trips and retries. Part of ``TaskStateMachine``, guarded by the task's lock, read-only
/// from outside: the machine's transitions write it.
struct TaskHops {
    /// Redirects followed so far.
    var redirectCount = 0
    /// `"METHOD URL"` of every request sent, to detect a redirect loop before the hop limit.
    var visited: Set<String> = []
    /// Metrics of each finished hop before the current one, in order.
    var metrics: [TransferMetrics] = []
    /// Whether the last transfer's metrics are the last of ``metrics`` already: a hop ended, and no transfer has
    /// been prepared since. A task that completes with that transfer's outcome (a challenge no credential answered,
    /// a redirect not followed) reports them once, not again as its final transfer's.
    var lastTransferRecorded = false
    /// When the task's first transfer was prepared, on a clock that a change of the system's time doesn't move:
    /// the resource timeout counts from it, across every hop and attempt.
    var firstTransferStart: ContinuousClock.Instant?
    /// Credentials sent for this task that the server answered with another 401.
    var authenticationFailures = 0
    /// The credentials this attempt sent that a 401 answered, each with the origin that refused it: default
    /// handling doesn't send them there again. One the server accepted, or that went to another origin, is
    /// not among them.
    var refusedCredentials: Set<SentCredential> = []
    /// The attempt running now, from 1; a retry starts the next (see `SessionTask+Retry.swift`).
    var attempt = 1
    /// The request the current attempt sent first, after adaptation: what the retrier is shown.
    var attemptRequest: Request?
    /// The conditional fields revalidating a stale cache entry, added to every attempt.
    var cacheValidators: HTTPHeaders?
    /// How many times the task has waited for a network (`SessionConfiguration.waitsForConnectivity`).
    var connectivityWaits = 0
    /// Whether a transfer of the task sent a credential of the session's (an authentication challenge's
    /// answer): its response is then not stored in the response cache.
    var sentCredential = false
    /// Whether the task stopped its transfer with an error of its own: a hook's answer it could not carry out
    /// (`.becomeDownload` for a task whose result is in memory, or no folder for the file). Sending the request
    /// again would meet the same answer, so the failure is final: not the retrier's, nor a connectivity wait's.
    var stoppedByTask = false

    /// Keeps the metrics of a transfer that leads to another (a redirect, a challenge, a retry), with the
    /// number of redirects followed before it: curl follows none itself, so the count is Herald's.
    mutating func recordHop(_ metrics: TransferMetrics?) {
        guard var metrics else { return }
        metrics.redirectCount = redirectCount
        self.metrics.append(metrics)
    }

    /// What tells one request of the task from another, for finding a redirect loop: its method, its URL, the
    /// cookies it carries and the user whose credential answers a challenge with it. A redirect back to a URL
    /// already requested is followed when the cookies sent changed since (a server that sets a cookie and sends
    /// the client back to where it came from, as a login or a cookie check does), or a credential goes with it
    /// now (a login page whose challenge was answered, sending the client back); sent again unchanged, it would
    /// get the same answer.
    static func key(method: String, url: URL, cookies: String?, credentialUser: String? = nil) -> String {
        "\(method) \(url.absoluteString)" + (cookies.map { "\n" + $0 } ?? "")
            + (credentialUser.map { "\ncredential " + $0 } ?? "")
    }
}

/// A credential a transfer sent, and the origin (scheme, host, port) it went to: what a 401 answering that
/// transfer refuses.
struct SentCredential: Hashable {
    var user: String
    var password: String
    var origin: String

    init(user: String, password: String, url: URL) {
        self.user = user
        self.password = password
        origin =
            "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? ""):\(url.effectivePort.map(String.init) ?? "")"
    }
}
