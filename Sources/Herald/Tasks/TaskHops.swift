import Foundation

/// What a task remembers across the transfers it runs for one request: redirects Herald follows by hand
/// and authentication round-trips. Guarded by the task's lock.
struct TaskHops {
    /// Redirects followed so far.
    var redirectCount = 0
    /// `"METHOD URL"` of every request sent, to detect a redirect loop before the hop limit.
    var visited: Set<String> = []
    /// Metrics of each finished hop before the current one, in order.
    var metrics: [TransferMetrics] = []
    /// Between two transfers: the previous one finished, the next is being prepared off the loop thread.
    var isBetweenHops = false
    /// The next transfer was made while the task was suspended; `resume()` hands it to the engine.
    var isWaitingToStart = false
    /// Credentials sent for this task that the server answered with another 401.
    var authenticationFailures = 0
    /// Whether the transfer running now sends a credential (so a 401 answering it is a failure).
    var sentCredential = false

    static func key(method: String, url: URL) -> String { "\(method) \(url.absoluteString)" }
}
