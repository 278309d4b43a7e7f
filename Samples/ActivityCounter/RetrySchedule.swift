import Foundation
import Herald

/// `--retry N`: which failures are tried again, and how long to wait before each attempt.
///
/// Only transient failures are retried (``FetchFailure/isTransient``: a connection refused or lost, a timeout,
/// 408, 429 and 5xx). The wait is exponential with full jitter — a random duration up to
/// `initialDelay × 2^(retry - 1)`, at most ``maximumDelay`` — so that many clients failing together don't come back
/// together. A `Retry-After` header (seconds or an HTTP date) replaces it, capped at ``maximumDelay``.
struct RetrySchedule: Sendable {
    /// How many times a failed download is tried again (0: never).
    var retries: Int
    /// The upper bound of the first wait, in seconds.
    var initialDelay: Double
    /// The longest wait, in seconds, whatever `Retry-After` says; `--retry-delay` is at most this too.
    static let defaultMaximumDelay: Double = 120
    /// No wait is longer than this, whatever `Retry-After` says.
    var maximumDelay: Double = defaultMaximumDelay

    /// The wait before retry number `retry` (1 for the first retry), or `nil` when `failure` is not retried.
    func delay(
        beforeRetry retry: Int, after failure: FetchFailure, response: HTTPResponse?,
        random: () -> Double = { Double.random(in: 0...1) }
    ) -> Double? {
        guard retry <= retries, failure.isTransient else { return nil }
        if let retryAfter = response.flatMap({ Self.retryAfter($0.headers["Retry-After"]) }) {
            return min(retryAfter, maximumDelay)
        }
        let ceiling = min(initialDelay * pow(2, Double(retry - 1)), maximumDelay)
        return ceiling * random()
    }

    /// `Retry-After` in seconds, as Herald's ``RetryAfter`` reads it (delta-seconds or any of the three HTTP
    /// date forms); `nil` when absent or invalid.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Double? {
        guard let value else { return nil }
        return RetryAfter.seconds(value, now: now)
    }
}
