import Foundation

/// Changes each attempt of a request before it is sent — for example to add a bearer token: Alamofire's
/// `RequestAdapter`.
///
/// Set one on a session (``SessionManager/interceptor``) or on a task (``SessionTask/interceptor``).
public protocol RequestAdapter: Sendable {
    /// Returns the request to send for one attempt of `task`.
    ///
    /// Called once per attempt — when the task first starts and again before each retry, so a token
    /// refreshed by a retrier is picked up; not at all when the response cache answers the task (see
    /// ``RequestInterceptor``) — on a Swift concurrency task, never on the engine's loop thread;
    /// the task stays `running` meanwhile. Not called again for the redirects and authentication
    /// round-trips of one attempt. The result is validated like a new request. The session's
    /// ``SessionConfiguration/httpAdditionalHeaders`` are added afterwards for fields it does not set. For
    /// an upload task the body comes from the upload, whatever the result's `body`.
    ///
    /// If the task is cancelled while this runs, it completes at once with ``HeraldError/Code/cancelled``
    /// and the result is ignored.
    ///
    /// - Parameters:
    ///   - request: The task's original request.
    ///   - task: The task about to send it.
    /// - Returns: The request to send.
    /// - Throws: Any error; the task then completes with it (a ``HeraldError`` as it is, anything else as
    ///   ``HeraldError/Code/invalidRequest`` with the error as ``HeraldError/underlying``) and sends nothing.
    func adapt(_ request: Request, for task: SessionTask) async throws -> Request
}

/// Decides, for each failed attempt of a task, whether to send it again: Alamofire's `RequestRetrier`.
public protocol RequestRetrier: Sendable {
    /// Decides what follows a failed attempt.
    ///
    /// Asked when an attempt ends with a transport error (never for ``HeraldError/Code/cancelled``) or
    /// with a response whose status is 400 or more — after Herald followed redirects and answered
    /// authentication challenges, so a 3xx it follows is never presented, nor a 401 whose Basic or Digest
    /// challenge a challenge hook or a credential stored for the origin answers (a 401 without either, a
    /// `Bearer` one among them, is presented: refreshing a token is the retrier's work); never for a streamed
    /// upload whose stream can't be given again (no ``SessionManager/taskNeedNewBodyStream``), nor for a failure
    /// of Herald's own between the attempt's transfers (too many redirects, a redirect loop, a refused downgrade
    /// to `http`, a `Location` that is no URL), which the attempt sent again would meet again. Called on a Swift
    /// concurrency task, never on the engine's loop thread; the task stays `running` meanwhile, and a
    /// `cancel()` then completes it at once with ``HeraldError/Code/cancelled``.
    ///
    /// - Parameter context: The task, the attempt's request, error and response, and the attempt number.
    /// - Returns: ``RetryDecision/retry``, ``RetryDecision/retryWithDelay(_:)`` or
    ///   ``RetryDecision/doNotRetry`` (the task then completes with the attempt's outcome, as it would
    ///   have without a retrier).
    func retry(_ context: RetryContext) async -> RetryDecision
}

/// An adapter and a retrier in one: Alamofire's `RequestInterceptor`.
///
/// Both methods have defaults (send the request unchanged; do not retry), so a type implements what it
/// needs. ``RetryPolicy`` is a ready one; ``Interceptor`` combines several, or wraps closures.
///
/// **With a response cache.** The session's ``SessionConfiguration/responseCache`` is looked up in
/// ``SessionTask/resume()``, before the adapter runs: the lookup judges the task's request as the session would
/// send it without the adapter. So an `Authorization` field the adapter adds doesn't keep a fresh entry an
/// anonymous request stored from answering the task (the adapter is then not called), and when the task goes to
/// the network, its answer, sent with the credential, is not stored. For authenticated requests, put the
/// credential on the request itself, or send them with a `Cache-Control: no-cache` request field or from a
/// session without a response cache.
public protocol RequestInterceptor: RequestAdapter, RequestRetrier {}

extension RequestInterceptor {
    /// Returns `request` unchanged.
    /// - Parameters:
    ///   - request: The task's original request.
    ///   - task: The task about to send it.
    /// - Returns: `request`.
    public func adapt(_ request: Request, for task: SessionTask) async throws -> Request { request }

    /// Returns ``RetryDecision/doNotRetry``.
    /// - Parameter context: The failed attempt.
    /// - Returns: ``RetryDecision/doNotRetry``.
    public func retry(_ context: RetryContext) async -> RetryDecision { .doNotRetry }
}

/// What a ``RequestRetrier`` decided about a failed attempt.
public enum RetryDecision: Sendable, Hashable {
    /// Send the request again at once.
    case retry
    /// Send the request again after this many seconds. The task keeps its state while it waits: the delay
    /// runs on if it is suspended, and the next attempt is then sent once it is resumed; `cancel()`
    /// completes the task at once.
    case retryWithDelay(TimeInterval)
    /// Complete the task with the attempt's outcome.
    case doNotRetry
}

/// One failed attempt, as a ``RequestRetrier`` sees it.
public struct RetryContext: Sendable {
    /// The task whose attempt failed.
    public let task: SessionTask
    /// The request the attempt sent first (after adaptation; before any redirect).
    public let request: Request
    /// Why the attempt failed: its transport error, or ``HeraldError/Code/unacceptableStatusCode`` (with
    /// ``HeraldError/statusCode``) for a response whose status is 400 or more.
    public let error: HeraldError
    /// The attempt's final response head, when one arrived.
    public let response: HTTPResponse?
    /// The number of the attempt that failed: 1 for the first, so `attempt - 1` retries were made before.
    public let attempt: Int
    /// When the task's ``SessionConfiguration/timeoutIntervalForResource`` ends (counted from its first
    /// transfer), or `nil` without one. A retry whose delay reaches it never makes its attempt: the task
    /// completes with ``HeraldError/Code/timedOut`` instead of this attempt's outcome.
    public let resourceDeadline: Date?

    /// Creates a context; Herald creates these itself, the initializer is public so retriers can be unit-tested.
    /// - Parameters:
    ///   - task: The task whose attempt failed.
    ///   - request: The request the attempt sent.
    ///   - error: Why it failed.
    ///   - response: Its response head, if any.
    ///   - attempt: The number of the failed attempt, from 1.
    ///   - resourceDeadline: When the task's resource timeout ends; default none.
    public init(
        task: SessionTask, request: Request, error: HeraldError, response: HTTPResponse?, attempt: Int,
        resourceDeadline: Date? = nil
    ) {
        self.task = task
        self.request = request
        self.error = error
        self.response = response
        self.attempt = attempt
        self.resourceDeadline = resourceDeadline
    }
}
