import Foundation
import HeraldEngine

/// A ready retrier: retries idempotent requests that failed for a transient reason, with exponential
/// backoff and jitter, honouring the server's `Retry-After`, up to a limit — Alamofire's `RetryPolicy`.
///
/// An attempt is retried when all of these hold:
/// - fewer than ``retryLimit`` retries were made;
/// - its method is in ``retryableHTTPMethods`` (by default the idempotent ones: a `POST` or `PATCH` is
///   never sent twice unless you add it);
/// - it failed with a code in ``retryableErrorCodes``, or its response's status is in
///   ``retryableHTTPStatusCodes``.
///
/// The delay is the response's `Retry-After` when it has one (seconds, or an HTTP date), and then no
/// jitter is added; a `Retry-After` longer than ``maximumRetryAfter`` means "not now": the attempt is not
/// retried. Otherwise it is `backoffScale × backoffBase^(retries made)`, at most ``maximumBackoff``,
/// multiplied by a random factor in `1 ± jitter`. A delay that reaches the task's resource timeout
/// (``RetryContext/resourceDeadline``) is not waited for either: the attempt's own outcome (a `503` and its
/// body) is the task's, not the `timedOut` the wait would end in.
public struct RetryPolicy: RequestInterceptor {
    /// The default ``retryLimit``: 2 retries, so 3 attempts in all.
    public static let defaultRetryLimit = 2
    /// The methods retried by default: the idempotent ones of RFC 9110.
    public static let defaultRetryableHTTPMethods: Set<String> = Transfer.idempotentMethods
    /// The statuses retried by default: request timeout, too many requests, and the transient server errors.
    public static let defaultRetryableHTTPStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504]
    /// The errors retried by default: timeouts, failed name lookups and connections, lost connections and
    /// answers that were not HTTP. Never TLS trust failures, cancellations or invalid requests.
    public static let defaultRetryableErrorCodes: Set<HeraldError.Code> = [
        .timedOut, .cannotFindHost, .cannotConnect, .networkConnectionLost, .badServerResponse,
    ]

    /// The most retries of one task. Default 2.
    public var retryLimit: Int
    /// The backoff's base: each retry waits this many times longer than the one before. Default 2.
    public var backoffBase: Double
    /// The first retry's delay before jitter, in seconds. Default 0.5.
    public var backoffScale: TimeInterval
    /// The longest backoff delay before jitter, in seconds. Default 30.
    public var maximumBackoff: TimeInterval
    /// The jitter, as a fraction of the backoff delay: the delay is multiplied by a random factor in
    /// `1 - jitter ... 1 + jitter`. Default 0.25; 0 for none. Clamped to 0...1.
    public var jitter: Double
    /// The longest `Retry-After` honoured, in seconds; a longer one is not waited for and the attempt is
    /// not retried. Default 120.
    public var maximumRetryAfter: TimeInterval
    /// The methods that may be retried (uppercase). Default ``defaultRetryableHTTPMethods``.
    public var retryableHTTPMethods: Set<String>
    /// The response statuses that count as transient. Default ``defaultRetryableHTTPStatusCodes``.
    public var retryableHTTPStatusCodes: Set<Int>
    /// The error codes that count as transient. Default ``defaultRetryableErrorCodes``.
    public var retryableErrorCodes: Set<HeraldError.Code>

    /// Creates a policy; every parameter defaults to the value documented on its property.
    /// - Parameters:
    ///   - retryLimit: The most retries of one task.
    ///   - backoffBase: How much longer each retry waits than the one before.
    ///   - backoffScale: The first retry's delay before jitter, in seconds.
    ///   - maximumBackoff: The longest backoff delay before jitter, in seconds.
    ///   - jitter: The random spread of each backoff delay, as a fraction of it.
    ///   - maximumRetryAfter: The longest `Retry-After` honoured, in seconds.
    ///   - retryableHTTPMethods: The methods that may be retried.
    ///   - retryableHTTPStatusCodes: The statuses that count as transient.
    ///   - retryableErrorCodes: The error codes that count as transient.
    public init(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        backoffBase: Double = 2,
        backoffScale: TimeInterval = 0.5,
        maximumBackoff: TimeInterval = 30,
        jitter: Double = 0.25,
        maximumRetryAfter: TimeInterval = 120,
        retryableHTTPMethods: Set<String> = RetryPolicy.defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = RetryPolicy.defaultRetryableHTTPStatusCodes,
        retryableErrorCodes: Set<HeraldError.Code> = RetryPolicy.defaultRetryableErrorCodes
    ) {
        self.retryLimit = retryLimit
        self.backoffBase = backoffBase
        self.backoffScale = backoffScale
        self.maximumBackoff = maximumBackoff
        self.jitter = jitter
        self.maximumRetryAfter = maximumRetryAfter
        self.retryableHTTPMethods = retryableHTTPMethods
        self.retryableHTTPStatusCodes = retryableHTTPStatusCodes
        self.retryableErrorCodes = retryableErrorCodes
    }

    /// Decides about a failed attempt as described on ``RetryPolicy``.
    /// - Parameter context: The failed attempt.
    /// - Returns: ``RetryDecision/retryWithDelay(_:)`` or ``RetryDecision/doNotRetry``.
    public func retry(_ context: RetryContext) async -> RetryDecision {
        decision(for: context, now: Date())
    }

    /// The decision for `context`, with `now` as the time an HTTP-date `Retry-After` is measured from.
    /// - Parameters:
    ///   - context: The failed attempt.
    ///   - now: The current time.
    /// - Returns: The decision.
    public func decision(for context: RetryContext, now: Date) -> RetryDecision {
        let retriesMade = context.attempt - 1
        guard retriesMade < retryLimit, retryableHTTPMethods.contains(context.request.method.uppercased()),
            isTransient(context)
        else { return .doNotRetry }
        let delay: TimeInterval
        if let value = context.response?.headers["Retry-After"], let wait = RetryAfter.seconds(value, now: now) {
            guard wait <= maximumRetryAfter else { return .doNotRetry }
            delay = wait
        } else {
            delay = backoff(afterRetries: retriesMade, random: Double.random(in: -1...1))
        }
        if let deadline = context.resourceDeadline, now.addingTimeInterval(delay) >= deadline { return .doNotRetry }
        return .retryWithDelay(delay)
    }

    /// The backoff delay after `retriesMade` retries, in seconds, for a random draw `random` in `-1...1`.
    /// - Parameters:
    ///   - retriesMade: How many retries were made before (0 for the first retry).
    ///   - random: Where in the jitter range the delay falls: -1 at its shortest, 1 at its longest.
    /// - Returns: The delay, never negative.
    public func backoff(afterRetries retriesMade: Int, random: Double) -> TimeInterval {
        let exponent = Double(max(0, retriesMade))
        let plain = min(maximumBackoff, backoffScale * pow(max(1, backoffBase), exponent))
        let spread = min(1, max(0, jitter))
        return max(0, plain * (1 + spread * min(1, max(-1, random))))
    }

    private func isTransient(_ context: RetryContext) -> Bool {
        if context.error.code == .unacceptableStatusCode {
            guard let status = context.error.statusCode ?? context.response?.statusCode else { return false }
            return retryableHTTPStatusCodes.contains(status)
        }
        return retryableErrorCodes.contains(context.error.code)
    }
}
