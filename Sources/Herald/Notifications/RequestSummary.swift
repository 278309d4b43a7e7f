import Foundation
import Instrumentation

/// What every task notification's payload says about the request the task was made for: its method, its
/// URL with credentials redacted, its header fields and the `ServiceContext` it belongs to.
///
/// Observers read it from the payload (``TaskLifecycleEvent/request``, ``TaskCompletion/request``,
/// ``DownloadMoveFailure/request``) instead of casting the notification's `object` back to a task. Herald
/// makes it once, when the task is created, so posting copies it without work.
public struct RequestSummary: Sendable {
    /// The HTTP method, such as `"GET"`.
    public let method: String
    /// The request URL, with any user name and password replaced by `***`: safe to log as it is.
    public let url: URL
    /// The header fields as the caller set them on the ``Request``, without the session's additional
    /// headers. **Not redacted**: an `Authorization` or `Cookie` value is there in clear, so redact before
    /// writing them out (HeraldObservers' `LogRedaction` does).
    public let headers: HTTPHeaders
    /// The trace context the task belongs to: ``Request/serviceContext`` when the request carried one,
    /// otherwise the task-local `ServiceContext.current` of the code that created the task; `nil` when
    /// there was neither. Handlers run on the session's event queue, where the caller's task-local context
    /// does not exist: a tracer or logger that wants it reads it here.
    public let serviceContext: ServiceContext?

    /// Creates a summary; Herald creates these itself, the initializer is public so observers can be
    /// unit-tested.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - url: The request URL; credentials in it are redacted before it is stored.
    ///   - headers: The request's header fields; default none.
    ///   - serviceContext: The task's trace context; default none.
    public init(method: String, url: URL, headers: HTTPHeaders = [:], serviceContext: ServiceContext? = nil) {
        self.method = method
        self.url = url.redactingCredentials()
        self.headers = headers
        self.serviceContext = serviceContext
    }

    /// The summary of `request` for a task whose context is `serviceContext`.
    init(_ request: Request, serviceContext: ServiceContext?) {
        self.init(
            method: request.method, url: request.url, headers: request.headers, serviceContext: serviceContext)
    }
}
