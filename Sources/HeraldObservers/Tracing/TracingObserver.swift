import Foundation
import Herald
import HeraldNotifications
import Tracing

/// Traces every task as an OpenTelemetry HTTP client span on swift-distributed-tracing.
///
/// A span of kind `client`, named after the method (`GET`), starts when the task first resumes and ends
/// when it completes. It carries `http.request.method`, `url.full` (credentials replaced by `REDACTED`),
/// `url.scheme`, `server.address`, `server.port`, and on completion `http.response.status_code`,
/// `http.response.body.size`, `network.protocol.version` and, on failure, `error.type` (the error code's
/// description, or the status code for a 4xx/5xx response) with the span status set to error.
/// Suspensions and later resumes are recorded as span events, and a download that could not be moved
/// (`downloadDidFailToMoveFile`) as a `herald.download.move_failed` event with `error.type`,
/// `herald.download.file` (the kept temporary file) and `herald.download.destination`.
///
/// The span is a child of the task's trace context: the `ServiceContext` carried in the payload's
/// `RequestSummary/serviceContext` — the request's own `Request/serviceContext`, or the task-local
/// `ServiceContext.current` of the code that created the task. Handlers run on the session's event
/// queue, where the caller's task-local context no longer exists, so that is the context that counts; a
/// task created outside any trace gets a top-level span. Herald also sends the same context to the
/// server (`traceparent` with a W3C propagator), so the server's span is this span's sibling, under the
/// caller's span.
/// Suspensions and later resumes are recorded as span events, and so is each retry (`herald.task.retry`,
/// with `herald.retry.attempt`, `herald.retry.delay`, `error.type` and the failed status). A wait for a
/// network is a `herald.task.waiting_for_connectivity` event with `error.type`; a reachability change posted
/// on the same center while spans are open is a `herald.network.reachability_changed` event on each of them,
/// with `herald.reachability.status` and `herald.reachability.previous_status`.
///
/// Pass the tracer your application uses (`InstrumentationSystem.tracer`, or any `Tracer`);
/// the observer never bootstraps one.
public final class TracingObserver<T: Tracer>: SessionObserver where T.Span: Sendable {
    private let tracer: T
    private let spans = Locked<[TaskKey: T.Span]>([:])

    /// Creates a tracing observer.
    /// - Parameter tracer: The tracer that creates and reports spans.
    public init(tracer: T) {
        self.tracer = tracer
    }

    /// Starts the task's span, or records a `resume` event on a span already started.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        if let span = spans.withLock({ $0[key] }) {
            span.addEvent("herald.task.resume")
            return
        }
        let request = notification.userInfo.request
        let method = request.method
        let span = tracer.startSpan(
            KnownHTTPMethod.all.contains(method) ? method : "HTTP", context: request.serviceContext ?? .topLevel,
            ofKind: .client)
        span.attributes["http.request.method"] = KnownHTTPMethod.bounded(method)
        if method != KnownHTTPMethod.bounded(method) {
            span.attributes["http.request.method_original"] = method
        }
        let url = request.url
        span.attributes["url.full"] = url.redacted()
        if let scheme = url.scheme { span.attributes["url.scheme"] = scheme }
        if let host = url.host { span.attributes["server.address"] = host }
        if let port = url.effectivePort { span.attributes["server.port"] = port }
        span.attributes["herald.session.id"] = notification.userInfo.sessionIdentifier
        span.attributes["herald.task.id"] = notification.userInfo.taskIdentifier
        let isDuplicate = spans.withLock { spans -> Bool in
            guard spans[key] == nil else { return true }
            spans[key] = span
            return false
        }
        // Two first resumes of one task racing on different threads cannot happen (a session posts from
        // one queue), but if they did, keep one span and drop the other.
        if isDuplicate { span.end() }
    }

    /// Records a `suspend` event on the task's span.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        spans.withLock { $0[TaskKey(notification.userInfo)] }?.addEvent("herald.task.suspend")
    }

    /// Records a `herald.download.move_failed` event on the download's span: the move failed and the file
    /// was kept (the span itself ends, with the error, at the `taskDidComplete` that follows).
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        let failure = notification.userInfo
        let key = TaskKey(sessionIdentifier: failure.sessionIdentifier, taskIdentifier: failure.taskIdentifier)
        guard let span = spans.withLock({ $0[key] }) else { return }
        span.addEvent(
            SpanEvent(
                name: "herald.download.move_failed",
                attributes: [
                    "error.type": .string(failure.error.code.description),
                    "herald.download.file": .string(failure.sourceURL.path),
                    "herald.download.destination": .string(failure.destinationURL.path),
                ]))
    }

    /// Records a `herald.task.retry` event on the task's span, with the attempt about to start, the delay
    /// in seconds, the failed attempt's error type and status.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let retry = notification.userInfo
        guard let span = spans.withLock({ $0[TaskKey(retry)] }) else { return }
        var attributes: SpanAttributes = [:]
        attributes["herald.retry.attempt"] = retry.attempt
        attributes["herald.retry.delay"] = retry.delay
        attributes["error.type"] = retry.error.code.description
        if let status = retry.response?.statusCode { attributes["http.response.status_code"] = status }
        span.addEvent(SpanEvent(name: "herald.task.retry", attributes: attributes))
    }

    /// Records a `herald.task.waiting_for_connectivity` event on the task's span, with the error type of the
    /// attempt that found no network.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let wait = notification.userInfo
        guard let span = spans.withLock({ $0[TaskKey(wait)] }) else { return }
        span.addEvent(
            SpanEvent(
                name: "herald.task.waiting_for_connectivity",
                attributes: ["error.type": .string(wait.error.code.description)]))
    }

    /// Records a `herald.network.reachability_changed` event on every open span: the network changed while
    /// those requests were under way.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        let change = notification.userInfo
        let open = spans.withLock { Array($0.values) }
        guard !open.isEmpty else { return }
        var attributes: SpanAttributes = [:]
        attributes["herald.reachability.status"] = change.status.label
        attributes["herald.reachability.previous_status"] = change.previousStatus.label
        for span in open {
            span.addEvent(SpanEvent(name: "herald.network.reachability_changed", attributes: attributes))
        }
    }

    /// Sets the response attributes and ends the task's span. A task that never resumed has no span.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let completion = notification.userInfo
        guard let span = spans.withLock({ $0.removeValue(forKey: TaskKey(completion)) }) else { return }
        if let response = completion.response {
            span.attributes["http.response.status_code"] = response.statusCode
            if let version = response.httpVersion.split(separator: "/").last {
                span.attributes["network.protocol.version"] = String(version)
            }
        }
        if let metrics = completion.metrics {
            span.attributes["http.response.body.size"] = Int(metrics.responseBodyBytes)
        }
        if let error = completion.error {
            span.attributes["error.type"] = error.code.description
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.message))
        } else if let status = completion.response?.statusCode, status >= 400 {
            span.attributes["error.type"] = String(status)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    /// Ends the spans of the session's tasks that never completed (which Herald does not do, but a
    /// tracer must never be left holding a span forever).
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let session = notification.userInfo.sessionIdentifier
        let orphans = spans.withLock { spans -> [T.Span] in
            let orphans = spans.filter { $0.key.sessionIdentifier == session }
            for key in orphans.keys { spans[key] = nil }
            return Array(orphans.values)
        }
        for span in orphans {
            span.attributes["error.type"] = "sessionInvalidated"
            span.setStatus(SpanStatus(code: .error, message: "The session was invalidated."))
            span.end()
        }
    }
}
