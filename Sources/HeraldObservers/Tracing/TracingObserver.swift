import Foundation
import Herald
import HeraldNotifications
import Tracing
import Synchronization

/// Traces every task as an OpenTelemetry HTTP client span on swift-distributed-tracing.
///
/// A span of kind `client`, named after the method (`GET`; `HTTP` for a method outside
/// ``TracingObserverConfiguration/knownMethods``), starts when the task first resumes and ends when its last
/// transfer ended (curl's measure; when the task completes, for a task that made none). Its attributes follow
/// OpenTelemetry's semantic conventions for HTTP client spans, with their types:
///
/// | attribute | type | when |
/// |---|---|---|
/// | `http.request.method` | string: a known method, else `_OTHER` | always |
/// | `http.request.method_original` | string: the method as sent | when it is not a known method |
/// | `url.full` | string: credentials and signature values `REDACTED`; the last server's URL after a redirect to another | always |
/// | `url.scheme`, `server.address` | string: of `url.full` | always |
/// | `server.port` | int: of `url.full` | always |
/// | `http.response.status_code` | int | when a response arrived |
/// | `network.protocol.version` | string: `1.0`, `1.1`, `2`, `3` | when a response arrived |
/// | `http.request.body.size` | int | when the request was sent |
/// | `http.response.body.size` | int | when a response arrived |
/// | `network.peer.address` | string: the IP address connected to | when a connection was made |
/// | `network.peer.port` | int | when a connection was made |
/// | `http.request.resend_count` | int: retries and redirects before the last request | when above 0 |
/// | `error.type` | string: the status code for 4xx/5xx, else the error code's description | on failure |
/// | `herald.response.refused` | string: the error code of the task's serializer or validation, for a response below 400 it refused (`serialization_failed`, `unacceptable_content_type`, `unacceptable_status_code`); the span keeps its status, and the error is recorded | when so |
/// | `herald.connection.reused` | bool: the request ran on a pooled connection | when a transfer ran |
/// | `herald.timing.time_in_queue` | double, seconds waiting for a connection | when measured |
/// | `herald.timing.name_lookup` | double, seconds | when a transfer ran |
/// | `herald.timing.connect`, `herald.timing.time_to_first_byte` | double, seconds | when a transfer ran |
/// | `herald.timing.tls_handshake` | double, seconds | when TLS was negotiated |
/// | `herald.session.id`, `herald.task.id` | int | always |
/// | `herald.response.source` | string: `network`, `cache` or `revalidated` (`ResponseSource`) | at completion |
/// | `herald.observation.ended` | bool: `true`, the span ended before its task completed (see below) | when so |
///
/// `url.full` is redacted by ``TracingObserverConfiguration/redaction``. The time in queue is
/// `TransferMetrics.timeInQueue`; the other timings are curl's, counted from the end of that wait:
/// on a reused connection the lookup and connect times are about zero. On failure the span's status is
/// error and the error is recorded as an exception whose message names the URL only redacted.
///
/// Suspensions and later resumes are recorded as span events, and a download that could not be moved
/// (`downloadDidFailToMoveFile`) as a `herald.download.move_failed` event with `error.type`,
/// `herald.download.file` (the kept temporary file) and `herald.download.destination`.
///
/// The span is a child of the task's trace context: the `ServiceContext` carried in the payload's
/// `RequestSummary/serviceContext` — the request's own `Request/serviceContext`, or the task-local
/// `ServiceContext.current` of the code that created the task. Handlers run on the session's event
/// queue, where the caller's task-local context no longer exists, so that is the context that counts; a
/// task created outside any trace gets a top-level span.
///
/// Herald sends the task's context to the server (`traceparent` with a W3C propagator). For the server's
/// span to be a child of this client span — OpenTelemetry's shape, one trace through every service — the
/// span must exist before the task sends its first byte, which an observer alone cannot guarantee: start
/// it with ``startSpan(for:)`` and make the task from the request it returns. The observer then ends that
/// span when the task completes, as it does its own. A task made without it gets a span started at its
/// first resume, and the server's span is that span's sibling, under the caller's span.
///
/// Each retry is an event (`herald.task.retry`, with `herald.retry.attempt`, `herald.retry.delay`,
/// `error.type` and the failed status). A wait for a network is a `herald.task.waiting_for_connectivity`
/// event with `error.type`, and its end a `herald.task.connectivity_returned` event; a reachability change posted on the same center while spans are open is a
/// `herald.network.reachability_changed` event on each of them, with `herald.reachability.status` and
/// `herald.reachability.previous_status`.
///
/// Pass the tracer your application uses (`InstrumentationSystem.tracer`, or any `Tracer`);
/// the observer never bootstraps one. When the observer is released with tasks still running (as when the
/// token that holds it is cancelled or released and nothing else keeps it), or a token is cancelled while the
/// observer lives on (``observationDidEnd(_:)``: that registration's tasks), their spans end with an error
/// status and `herald.observation.ended`, so a tracer never holds a span for ever.
public final class TracingObserver<T: Tracer>: SessionObserver where T.Span: Sendable {
    private struct State {
        /// The spans of tasks seen resuming and not yet complete.
        var spans: [TaskKey: T.Span] = [:]
        /// Spans started by ``startSpan(for:)`` whose task has not resumed yet, by ``PendingSpanKey`` value.
        var pending: [UInt64: T.Span] = [:]
        /// The resends of tasks seen retrying (the last retry's attempt less one), and when the last retry was
        /// announced.
        var retries: [TaskKey: (resends: Int, at: Date)] = [:]
        /// When the spans this observer started at a task's resume began: a span ends no earlier.
        var starts: [TaskKey: Date] = [:]
    }

    private let tracer: T
    private let configuration: TracingObserverConfiguration
    private let state = Locked(State())

    /// Creates a tracing observer.
    /// - Parameters:
    ///   - tracer: The tracer that creates and reports spans.
    ///   - configuration: The known methods and what `url.full` redacts; default
    ///     ``TracingObserverConfiguration/init()``.
    public init(tracer: T, configuration: TracingObserverConfiguration = TracingObserverConfiguration()) {
        self.tracer = tracer
        self.configuration = configuration
    }

    deinit {
        // A tracer must not hold a span forever: those started for requests that never became tasks, and those
        // of tasks still running when the observation ended (its token cancelled or released), end here.
        let (pending, running) = state.withLock { ($0.pending.values, $0.spans.values) }
        for span in pending {
            span.setStatus(SpanStatus(code: .error, message: "The request was never sent."))
            span.end()
        }
        for span in running { Self.endUnfinished(span) }
    }

    /// Ends the span of a task whose completion the observer will never hear: an error, with
    /// `herald.observation.ended`, and no `error.type` (the request's outcome is unknown).
    private static func endUnfinished(_ span: T.Span) {
        span.attributes["herald.observation.ended"] = true
        span.setStatus(SpanStatus(code: .error, message: "The observation ended before the task completed."))
        span.end()
    }

    /// A registration of the observer ended (its token cancelled or released) while the observer lives on: the
    /// spans of the tasks it announced as running, whose completion it will now never hear, end now, as an
    /// error with `herald.observation.ended`. Spans started by ``startSpan(for:)`` for requests not yet sent
    /// belong to no registration and stay.
    /// - Parameter end: What the registration left open.
    public func observationDidEnd(_ end: ObservationEnd) {
        let unfinished = state.withLock { state in
            end.openTasks.compactMap { task -> T.Span? in
                let key = TaskKey(task)
                state.retries[key] = nil
                state.starts[key] = nil
                return state.spans.removeValue(forKey: key)
            }
        }
        for span in unfinished { Self.endUnfinished(span) }
    }

    /// Starts the client span of a request now, before its task exists, and returns the request carrying the
    /// span's context, so that the `traceparent` Herald sends names this span and the server's span becomes
    /// its child.
    ///
    /// The span is a child of `request`'s `serviceContext`, or else of the caller's task-local
    /// `ServiceContext.current` (an incoming request's span, in a server), or else top-level. It carries the
    /// attributes the observer sets at a first resume, and is the span the observer completes for the task
    /// made from the returned request: make exactly one task from it. A span whose request is never sent is
    /// ended, with an error status, when the observer is deinitialized.
    ///
    /// - Parameter request: The request about to be sent.
    /// - Returns: `request` with its `serviceContext` set to the new span's context.
    public func startSpan(for request: Request) -> Request {
        var request = request
        request.serviceContext = startClientSpan(for: request, parent: request.serviceContext ?? ServiceContext.current)
        return request
    }

    /// Starts the client span of every task `session` makes from now on, as the task is made, so that the
    /// `traceparent` Herald sends names that span and the server's span becomes its child — with no change to
    /// the code that makes the tasks. Sets the session's `taskTraceContext` hook (replacing
    /// any other); a request that already carries a span from ``startSpan(for:)`` keeps it.
    ///
    /// Each span is a child of the context the task would belong to (the request's `serviceContext`, else the
    /// creating code's `ServiceContext.current`, else top-level) and is the span this observer completes for
    /// the task: observe the session's notification center with this observer too. A task that is made and
    /// never resumed leaves its span open until this observer is deinitialized, which ends it with an error
    /// status. The session holds the observer weakly.
    ///
    /// Ending the observation (cancelling its token) doesn't take the hook back: while the observer lives, the
    /// session goes on starting a span for each task it makes, and with no completion delivered none of them
    /// ends before the observer does. To stop tracing a session, set its `taskTraceContext` to `nil` too.
    ///
    /// - Parameter session: The session whose tasks get their client span when they are made.
    public func traceClientSpans(of session: SessionManager) {
        session.taskTraceContext = { [weak self] request, context in
            guard let self, context?[PendingSpanKey.self] == nil else { return context }
            return self.startClientSpan(for: request, parent: context)
        }
    }

    /// Starts a client span for `request` under `parent` (top-level when `nil`), keeps it for the task that
    /// will carry the returned context, and returns the span's context marked with its key.
    private func startClientSpan(for request: Request, parent: ServiceContext?) -> ServiceContext {
        let span = tracer.startSpan(spanName(for: request.method), context: parent ?? .topLevel, ofKind: .client)
        setRequestAttributes(on: span, method: request.method, url: request.url)
        // Numbered across every observer of the process: two observers on one center each see the other's
        // tasks, and must not take one of their own spans for them.
        let identifier = pendingSpanIdentifiers.wrappingAdd(1, ordering: .relaxed).oldValue
        state.withLock { $0.pending[identifier] = span }
        var context = span.context
        context[PendingSpanKey.self] = identifier
        return context
    }

    /// The span ``startSpan(for:)`` started for the request, taken out of the pending ones; `nil` when the
    /// request had none, or its span was already taken by another task made from the same request.
    private func takePendingSpan(for request: RequestSummary) -> T.Span? {
        guard let identifier = request.serviceContext?[PendingSpanKey.self] else { return nil }
        return state.withLock { $0.pending.removeValue(forKey: identifier) }
    }

    /// OpenTelemetry's span name for an HTTP client request: the method, or `HTTP` for an unknown one.
    private func spanName(for method: String) -> String {
        configuration.knownMethods.contains(method) ? method : "HTTP"
    }

    /// The attributes known before the request is sent.
    private func setRequestAttributes(on span: T.Span, method: String, url: URL) {
        let bounded = KnownHTTPMethod.bounded(method, known: configuration.knownMethods)
        span.attributes["http.request.method"] = bounded
        if method != bounded {
            span.attributes["http.request.method_original"] = method
        }
        setURLAttributes(on: span, url: url)
    }

    /// The URL and the server it names (set again at completion for the URL a redirect led to).
    private func setURLAttributes(on span: T.Span, url: URL) {
        span.attributes["url.full"] = configuration.redaction.redacting(url)
        if let scheme = url.scheme { span.attributes["url.scheme"] = scheme.lowercased() }
        if let host = HTTPAttributeValue.serverAddress(of: url) { span.attributes["server.address"] = host }
        if let port = url.effectivePort { span.attributes["server.port"] = port }
    }

    /// Starts the task's span (or adopts the one ``startSpan(for:)`` started for its request), or records a
    /// `resume` event on a span already started.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        if let span = state.withLock({ $0.spans[key] }) {
            span.addEvent("herald.task.resume")
            return
        }
        let request = notification.userInfo.request
        let span: T.Span
        var startedAt: Date?
        if let pending = takePendingSpan(for: request) {
            span = pending
        } else {
            startedAt = notification.userInfo.date
            // From the moment the task resumed: this handler runs later, on the session's event queue.
            span = tracer.startSpan(
                spanName(for: request.method), context: request.serviceContext ?? .topLevel, ofKind: .client,
                at: Self.instant(notification.userInfo.date))
            setRequestAttributes(on: span, method: request.method, url: request.url)
        }
        span.attributes["herald.session.id"] = notification.userInfo.sessionIdentifier
        span.attributes["herald.task.id"] = notification.userInfo.taskIdentifier
        let isDuplicate = state.withLock { state -> Bool in
            guard state.spans[key] == nil else { return true }
            state.spans[key] = span
            state.starts[key] = startedAt
            return false
        }
        // Two first resumes of one task racing on different threads cannot happen (a session posts from
        // one queue), but if they did, keep one span and drop the other.
        if isDuplicate { span.end() }
    }

    /// Records a `suspend` event on the task's span.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        state.withLock { $0.spans[TaskKey(notification.userInfo)] }?.addEvent("herald.task.suspend")
    }

    /// Records a `herald.download.move_failed` event on the download's span: the move failed and the file
    /// was kept (the span itself ends, with the error, at the `taskDidComplete` that follows).
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        let failure = notification.userInfo
        let key = TaskKey(sessionIdentifier: failure.sessionIdentifier, taskIdentifier: failure.taskIdentifier)
        guard let span = state.withLock({ $0.spans[key] }) else { return }
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
        let key = TaskKey(retry)
        guard
            let span = state.withLock({ state -> T.Span? in
                state.retries[key] = (max(state.retries[key]?.resends ?? 0, retry.attempt - 1), retry.date)
                return state.spans[key]
            })
        else { return }
        var attributes: SpanAttributes = [:]
        attributes["herald.retry.attempt"] = retry.attempt
        attributes["herald.retry.delay"] = retry.delay
        attributes["error.type"] = HTTPAttributeValue.errorType(error: retry.error, response: retry.response)
        if let status = retry.response?.statusCode { attributes["http.response.status_code"] = status }
        span.addEvent(SpanEvent(name: "herald.task.retry", attributes: attributes))
    }

    /// Records a `herald.task.waiting_for_connectivity` event on the task's span, with the error type of the
    /// attempt that found no network.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let wait = notification.userInfo
        guard let span = state.withLock({ $0.spans[TaskKey(wait)] }) else { return }
        span.addEvent(
            SpanEvent(
                name: "herald.task.waiting_for_connectivity",
                attributes: ["error.type": .string(wait.error.code.description)]))
    }

    /// Records a `herald.task.connectivity_returned` event on the task's span: its wait is over and its attempt
    /// starts again.
    /// - Parameter notification: `taskDidEndWaitingForConnectivity`.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        guard let span = state.withLock({ $0.spans[TaskKey(notification.userInfo)] }) else { return }
        span.addEvent(SpanEvent(name: "herald.task.connectivity_returned"))
    }

    /// Records a `herald.network.reachability_changed` event on every open span: the network changed while
    /// those requests were under way. A change of a monitor that follows one host
    /// (`ReachabilityChange.host`) is about that host's route: it goes on the spans of requests to that host
    /// only, with the host as `server.address`.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        let change = notification.userInfo
        var open = state.withLock { Array($0.spans.values) }
        let host = change.host.map { $0.lowercased() }
        if let host {
            open = open.filter { $0.attributes.get("server.address") == .string(host) }
        }
        guard !open.isEmpty else { return }
        var attributes: SpanAttributes = [:]
        attributes["herald.reachability.status"] = change.status.label
        attributes["herald.reachability.previous_status"] = change.previousStatus.label
        if let host { attributes["server.address"] = host }
        for span in open {
            span.addEvent(SpanEvent(name: "herald.network.reachability_changed", attributes: attributes))
        }
    }

    /// Sets the response attributes and ends the task's span. A task that never resumed has no span.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let completion = notification.userInfo
        let key = TaskKey(completion)
        // A task cancelled before it resumed has no span, unless startSpan(for:) started one for its request.
        let (open, retries, startedAt) = state.withLock { state in
            (
                state.spans.removeValue(forKey: key), state.retries.removeValue(forKey: key),
                state.starts.removeValue(forKey: key)
            )
        }
        guard let span = open ?? takePendingSpan(for: completion.request) else { return }
        let requested = completion.request.url
        if let final = completion.finalURL, !RedirectRules.isSameOrigin(final, requested) {
            // After a redirect to another server the status, the peer and the timings are that server's: so are
            // the URL and the server named, as in the metrics' dimensions.
            setURLAttributes(on: span, url: final)
        }
        if let response = completion.response { span.attributes["http.response.status_code"] = response.statusCode }
        if let version = HTTPAttributeValue.protocolVersion(of: completion) {
            span.attributes["network.protocol.version"] = version
        }
        span.attributes["herald.response.source"] = completion.responseSource.rawValue
        let metrics = completion.metrics
        if let metrics {
            Self.setTransferAttributes(
                on: span, metrics: metrics, responseArrived: HTTPAttributeValue.receivedBody(completion))
        }
        // Every request sent after the first: each transfer the task ran (redirects, authentication round trips
        // and retries, of every attempt) when the task says, else what this observer saw and the last attempt's
        // redirects.
        let transfers = (notification.object as? SessionTask)?.hopMetrics.count ?? 0
        let resends = max(transfers - 1, (retries?.resends ?? 0) + (metrics?.redirectCount ?? 0))
        if resends > 0 { span.attributes["http.request.resend_count"] = resends }
        if let errorType = HTTPAttributeValue.errorType(error: completion.error, response: completion.response) {
            span.attributes["error.type"] = errorType
            if let error = completion.error {
                // The error as exported names the URL only redacted, in its message as in its description.
                let redacted = error.redacted(by: configuration.redaction, requestURL: completion.request.url)
                span.recordError(redacted)
                span.setStatus(SpanStatus(code: .error, message: redacted.message))
            } else {
                span.setStatus(SpanStatus(code: .error))
            }
        } else if let error = completion.error {
            // The exchange succeeded and the task refused its response (its serializer, its validation): kept
            // on the span, which it does not fail.
            span.attributes["herald.response.refused"] = error.code.description
            span.recordError(error.redacted(by: configuration.redaction, requestURL: completion.request.url))
        }
        // At the moment the last transfer ended, when curl measured it, or (no transfer: a cache hit, a failure
        // before the network) when the task completed: the notification arrives after the completion handler
        // ran, and by then the caller's own span (a server's request) may have ended.
        // Never before the span's start: an observer registered while the task ran first sees it resume (after
        // a suspension) later than its transfer ended.
        var ended = metrics.map { $0.startDate.addingTimeInterval($0.total) } ?? completion.date
        if let retriedAt = retries?.at, retriedAt > ended {
            // The last transfer is the failed attempt a retry followed, and the task ended during the retry's
            // delay (cancelled, out of time): the span covers the wait, and never ends before its own retry event.
            ended = max(completion.date, retriedAt)
        }
        span.end(at: Self.instant(max(ended, startedAt ?? ended)))
    }

    /// The peer, the sizes and the connection's timings of the task's last transfer.
    private static func setTransferAttributes(on span: T.Span, metrics: TransferMetrics, responseArrived: Bool) {
        // A request that never left (no connection, no header byte sent) has no body size, nor a response.
        if metrics.requestHeaderBytes > 0 {
            span.attributes["http.request.body.size"] = Int(metrics.requestBodyBytes)
        }
        if responseArrived {
            span.attributes["http.response.body.size"] = Int(metrics.responseBodyBytes)
        }
        if let address = metrics.remoteAddress { span.attributes["network.peer.address"] = address }
        if let port = metrics.remotePort { span.attributes["network.peer.port"] = port }
        span.attributes["herald.connection.reused"] = metrics.connectionReused
        if let queued = metrics.timeInQueue { span.attributes["herald.timing.time_in_queue"] = queued }
        span.attributes["herald.timing.name_lookup"] = metrics.nameLookup
        span.attributes["herald.timing.connect"] = metrics.connect
        if metrics.tlsHandshake > 0 { span.attributes["herald.timing.tls_handshake"] = metrics.tlsHandshake }
        span.attributes["herald.timing.time_to_first_byte"] = metrics.timeToFirstByte
    }

    /// A date as a tracer's instant.
    private static func instant(_ date: Date) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, date.timeIntervalSince1970 * 1e9)))
    }

    /// Ends the spans of the session's tasks that never completed (which Herald does not do, but a
    /// tracer must never be left holding a span forever).
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let session = notification.userInfo.sessionIdentifier
        let orphans = state.withLock { state -> [T.Span] in
            let orphans = state.spans.filter { $0.key.sessionIdentifier == session }
            for key in orphans.keys {
                state.spans[key] = nil
                state.starts[key] = nil
            }
            // Every retry the session's tasks announced, those of tasks without a span included (a registration
            // made after their resume that ended before their completion): none of them will complete now.
            state.retries = state.retries.filter { $0.key.sessionIdentifier != session }
            return Array(orphans.values)
        }
        for span in orphans {
            span.attributes["error.type"] = HeraldError.Code.sessionInvalidated.description
            span.setStatus(SpanStatus(code: .error, message: "The session was invalidated."))
            span.end()
        }
    }
}

/// The choices OpenTelemetry's HTTP span conventions leave to ``TracingObserver``.
public struct TracingObserverConfiguration: Sendable {
    /// The methods recorded as themselves in `http.request.method` and the span's name; any other is
    /// `_OTHER` (with `http.request.method_original`) and the span is named `HTTP`. Default
    /// ``HTTPSemanticConventions/knownMethods``; add the methods your services define, such as `QUERY`.
    public var knownMethods: Set<String> = HTTPSemanticConventions.knownMethods
    /// What `url.full` and an error's message never carry in clear: URL credentials always, and the values of
    /// the query items named in ``LogRedaction/queryItemNames``. Default ``LogRedaction/default``, which names
    /// ``HTTPSemanticConventions/redactedQueryItems``.
    public var redaction: LogRedaction = .default

    /// The default configuration.
    public init() {}
}

/// The next ``PendingSpanKey`` value, for every tracing observer of the process.
private let pendingSpanIdentifiers = Atomic<UInt64>(1)

/// Marks a context made by ``TracingObserver/startSpan(for:)``: its value names the pending span, so that the
/// observer adopts it for the task instead of starting another. Never injected: it stays in the process.
private enum PendingSpanKey: ServiceContextKey {
    typealias Value = UInt64
}
