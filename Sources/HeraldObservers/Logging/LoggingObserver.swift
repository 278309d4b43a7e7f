import Foundation
import Herald
import HeraldNotifications
import Instrumentation
import Logging

/// Logs every task's lifecycle on swift-log, with secrets redacted.
///
/// Start (`taskDidResume`), suspension and completion of each task are logged at `debug` with
/// dot-notation metadata — `herald.session.id`, `herald.task.id`, `http.request.method`, `url.full`
/// (redacted), and on completion `http.response.status_code`, `herald.response.source` (`network`, `cache`
/// or `revalidated`), `herald.duration`, `herald.bytes.sent`,
/// `herald.bytes.received` (the duration and the byte counts are the task's last transfer's, as
/// `TaskCompletion.metrics` are: a redirect's or a failed attempt's are not in them), `error.type` (as the
/// metrics and spans have it: the status of 400 or more, else the error's code), `herald.error.code` and
/// `error.message` for a task that failed; request and response headers and curl's timings are logged at
/// `trace`. Messages are constant, so log backends can group them. Secrets are handled by
/// ``LogRedaction``; control characters in what a server controls (header names and values, error messages) are
/// escaped (`\r`, `\u{1B}`), so that no server can forge or hide a line of a log written as text. A download that
/// could not be moved (`downloadDidFailToMoveFile`) is logged at `warning`, with the kept file's path. A task
/// waiting for a network (`taskIsWaitingForConnectivity`), the end of that wait (`taskDidEndWaitingForConnectivity`,
/// `task connectivity returned`) and a reachability change (`reachabilityDidChange`, from a `NetworkReachability`
/// posting on the same center) are logged at `debug`.
///
/// **Trace ids.** Each line about a task is logged with the task's trace context — the payload's
/// `RequestSummary/serviceContext` — bound as the task-local `ServiceContext.current`, both when its
/// metadata is built and when it is handed to the logger, so the logger's metadata provider (swift-otel's,
/// or your own reading `ServiceContext.current`) adds the trace and span ids to it, and a log handler that
/// reads the context itself (swift-otel's OTLP one) sets them on the record. Without that binding the provider would see nothing: handlers run on the session's event
/// queue, not in the task that made the request.
///
/// As every library should, it takes the `Logger` it writes to and never bootstraps a backend.
///
/// The handlers only build each entry's metadata: the entry is handed to the logger on a thread of the
/// observer's own, in the order the notifications arrived, so a log backend's I/O never runs on (nor
/// slows) the thread that posts. The logger's metadata provider is read when the notification arrives,
/// and its values go with the entry. Call ``flush()`` before the program exits, after
/// `SessionManager.invalidateAndWait(cancelingTasks:)`. A backend writing to a closed pipe gets `EPIPE`
/// on that thread rather than a `SIGPIPE` that would end the process. At most 65,536 entries wait for a
/// backend that doesn't keep up; later ones are dropped and counted in ``droppedEntries``.
///
/// ```swift
/// let token = LoggingObserver(logger: logger).observe(session.notificationCenter)
/// ```
public final class LoggingObserver: SessionObserver {
    /// Where entries go.
    public let logger: Logger
    /// What is redacted.
    public let redaction: LogRedaction

    /// Creates a logging observer.
    /// - Parameters:
    ///   - logger: The logger to write to; its level decides what is written (`debug` for the
    ///     lifecycle, `trace` for headers and timings).
    ///   - redaction: What to redact; default ``LogRedaction/default``.
    public init(logger: Logger, redaction: LogRedaction = .default) {
        self.logger = logger
        self.redaction = redaction
        self.entries = SinkWriter(name: "herald.logs") { entry in
            // Bound again here, on the observer's thread: a log handler may read the trace context itself
            // when it logs (swift-otel's sets the OTLP record's trace and span ids from it).
            if let context = entry.context {
                ServiceContext.withValue(context) {
                    logger.log(level: entry.level, entry.message, metadata: entry.metadata)
                }
            } else {
                logger.log(level: entry.level, entry.message, metadata: entry.metadata)
            }
            return true
        }
    }

    /// Returns once every entry of the notifications this observer received before the call has been
    /// handed to the logger (what the log backend does with it then, such as buffering, is its own).
    ///
    /// Suspends the calling task; never blocks a thread.
    public func flush() async {
        await entries.flush()
    }

    /// How many entries were dropped because 65,536 were already waiting for a log backend that didn't keep up.
    public var droppedEntries: Int { entries.droppedCount }

    /// One log call, made on the observer's thread.
    private struct Entry: Sendable {
        let level: Logger.Level
        let message: Logger.Message
        let metadata: Logger.Metadata
        /// The task's trace context, bound as `ServiceContext.current` while the entry is logged.
        let context: ServiceContext?
    }

    private let entries: SinkWriter<Entry>

    /// Queues an entry for the logger, with what the logger's metadata provider gives now (on the
    /// posting thread) under `metadata`.
    private func write(
        _ level: Logger.Level, _ message: Logger.Message, metadata: Logger.Metadata, request: RequestSummary? = nil
    ) {
        guard logger.logLevel <= level else { return }
        let provided = providedMetadata(for: request)
        // Without a provider (or when it gives nothing) the entry's own metadata is used as it is: merging
        // into an empty dictionary would hash every key again.
        let merged = provided.isEmpty ? metadata : provided.merging(metadata) { _, explicit in explicit }
        entries.submit(Entry(level: level, message: message, metadata: merged, context: request?.serviceContext))
    }

    /// Logs `task resumed` at `debug` and the request headers at `trace`.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        logLifecycle("task resumed", notification)
        guard logger.logLevel <= .trace else { return }
        let request = notification.userInfo.request
        var metadata = identity(notification.userInfo)
        addHeaders(request.headers, as: "http.request.header.", to: &metadata)
        write(.trace, "task request headers", metadata: metadata, request: request)
    }

    /// Adds `headers`, redacted, under `prefix` and each lowercased name; the values of a repeated name joined
    /// with `, `, as HTTP joins them, so no field of a repeated name is lost.
    private func addHeaders(_ headers: HTTPHeaders, as prefix: String, to metadata: inout Logger.Metadata) {
        for (name, value) in redaction.redacting(headers) {
            let key = prefix + Self.printable(name.lowercased())
            let value = Self.printable(value)
            if case .string(let previous)? = metadata[key] {
                metadata[key] = .string(previous + ", " + value)
            } else {
                metadata[key] = .string(value)
            }
        }
    }

    /// Logs `task suspended` at `debug`.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        logLifecycle("task suspended", notification)
    }

    /// Logs `task will retry` at `debug`, with the attempt about to start (`herald.retry.attempt`), the
    /// delay before it (`herald.retry.delay`, seconds), the failed attempt's status and error code.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        guard logger.logLevel <= .debug else { return }
        let retry = notification.userInfo
        var metadata: Logger.Metadata = [
            "herald.session.id": .stringConvertible(retry.sessionIdentifier),
            "herald.task.id": .stringConvertible(retry.taskIdentifier),
            "herald.retry.attempt": .stringConvertible(retry.attempt),
            "herald.retry.delay": .string(Self.seconds(retry.delay)),
        ]
        // As the metrics and the spans record it: the failed status, else the error code.
        if let errorType = HTTPAttributeValue.errorType(error: retry.error, response: retry.response) {
            metadata["error.type"] = .string(errorType)
        }
        metadata["http.request.method"] = .string(retry.request.method)
        metadata["url.full"] = .string(redaction.redacting(retry.request.url))
        if let response = retry.response {
            metadata["http.response.status_code"] = .stringConvertible(response.statusCode)
        }
        write(.debug, "task will retry", metadata: metadata, request: retry.request)
    }

    /// Logs `task waiting for connectivity` at `debug`, with the error of the attempt that found no network.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        guard logger.logLevel <= .debug else { return }
        let wait = notification.userInfo
        var metadata = Self.identity(session: wait.sessionIdentifier, task: wait.taskIdentifier)
        metadata["http.request.method"] = .string(wait.request.method)
        metadata["url.full"] = .string(redaction.redacting(wait.request.url))
        metadata["error.type"] = .string(wait.error.code.description)
        write(.debug, "task waiting for connectivity", metadata: metadata, request: wait.request)
    }

    /// Logs `task connectivity returned` at `debug`: its wait is over and its attempt starts again.
    /// - Parameter notification: `taskDidEndWaitingForConnectivity`.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        guard logger.logLevel <= .debug else { return }
        let wait = notification.userInfo
        var metadata = Self.identity(session: wait.sessionIdentifier, task: wait.taskIdentifier)
        metadata["http.request.method"] = .string(wait.request.method)
        metadata["url.full"] = .string(redaction.redacting(wait.request.url))
        write(.debug, "task connectivity returned", metadata: metadata, request: wait.request)
    }

    /// Logs `network reachability changed` at `debug`: the new and previous status
    /// (`herald.reachability.status`, `herald.reachability.previous_status`: bounded labels such as
    /// `reachable_via_ethernet`), the interface (`network.interface.name`) and the host followed, if any.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        guard logger.logLevel <= .debug else { return }
        let change = notification.userInfo
        var metadata: Logger.Metadata = [
            "herald.reachability.status": .string(change.status.label),
            "herald.reachability.previous_status": .string(change.previousStatus.label),
        ]
        if let interface = change.status.interface { metadata["network.interface.name"] = .string(interface.name) }
        if let host = change.host { metadata["server.address"] = .string(host.lowercased()) }
        write(.debug, "network reachability changed", metadata: metadata)
    }

    /// Logs `task completed` at `debug` (with status, `herald.response.source` — `network`, `cache` or
    /// `revalidated` —, duration, bytes and error code) and the response
    /// headers and timings at `trace`.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        guard logger.logLevel <= .debug else { return }
        let completion = notification.userInfo
        var metadata = identity(completion)
        metadata["http.request.method"] = .string(completion.request.method)
        metadata["url.full"] = .string(redaction.redacting(completion.request.url))
        if let response = completion.response {
            metadata["http.response.status_code"] = .stringConvertible(response.statusCode)
        }
        metadata["herald.response.source"] = .string(completion.responseSource.rawValue)
        if let metrics = completion.metrics {
            metadata["herald.duration"] = .string(Self.seconds(metrics.total))
            metadata["herald.bytes.sent"] = .stringConvertible(metrics.requestBodyBytes)
            metadata["herald.bytes.received"] = .stringConvertible(metrics.responseBodyBytes)
        }
        // As the metrics and the spans record it: the failed status, else the error code — none for a body that
        // arrived whole and then didn't parse. The task's error code is always there besides.
        if let errorType = HTTPAttributeValue.errorType(error: completion.error, response: completion.response) {
            metadata["error.type"] = .string(errorType)
        }
        if let error = completion.error {
            metadata["herald.error.code"] = .string(error.code.description)
            let urls = [completion.request.url] + (error.url.map { [$0] } ?? [])
            metadata["error.message"] = .string(Self.printable(redaction.redacting(error.message, secretsOf: urls)))
        }
        write(.debug, "task completed", metadata: metadata, request: completion.request)

        guard logger.logLevel <= .trace else { return }
        var detail = identity(completion)
        if let finalURL = completion.finalURL {
            detail["herald.final_url"] = .string(redaction.redacting(finalURL))
        }
        if let response = completion.response {
            addHeaders(response.headers, as: "http.response.header.", to: &detail)
        }
        if let metrics = completion.metrics {
            detail["herald.timing.name_lookup"] = .string(Self.seconds(metrics.nameLookup))
            detail["herald.timing.connect"] = .string(Self.seconds(metrics.connect))
            detail["herald.timing.tls"] = .string(Self.seconds(metrics.tlsHandshake))
            detail["herald.timing.first_byte"] = .string(Self.seconds(metrics.timeToFirstByte))
            if let queued = metrics.timeInQueue {
                detail["herald.timing.time_in_queue"] = .string(Self.seconds(queued))
            }
            detail["herald.redirects"] = .stringConvertible(metrics.redirectCount)
            detail["herald.connection_reused"] = .stringConvertible(metrics.connectionReused)
        }
        write(.trace, "task completion detail", metadata: detail, request: completion.request)
    }

    /// Logs `download move failed` at `warning`: the error, the kept temporary file (`herald.download.file`)
    /// and the destination it could not reach (`herald.download.destination`).
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        guard logger.logLevel <= .warning else { return }
        let failure = notification.userInfo
        let metadata: Logger.Metadata = [
            "herald.session.id": .stringConvertible(failure.sessionIdentifier),
            "herald.task.id": .stringConvertible(failure.taskIdentifier),
            "http.request.method": .string(failure.request.method),
            "url.full": .string(redaction.redacting(failure.request.url)),
            "error.type": .string(failure.error.code.description),
            "error.message": .string(
                Self.printable(redaction.redacting(failure.error.message, secretsOf: [failure.request.url]))),
            "herald.download.file": .string(failure.sourceURL.path),
            "herald.download.destination": .string(failure.destinationURL.path),
        ]
        write(.warning, "download move failed", metadata: metadata, request: failure.request)
    }

    /// Logs `session invalidated` at `debug`.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        var metadata: Logger.Metadata = [
            "herald.session.id": .stringConvertible(notification.userInfo.sessionIdentifier)
        ]
        if let error = notification.userInfo.error {
            metadata["error.type"] = .string(error.code.description)
        }
        write(.debug, "session invalidated", metadata: metadata)
    }

    // MARK: - helpers

    private func logLifecycle(_ message: Logger.Message, _ notification: TypedNotification<TaskLifecycleEvent>) {
        guard logger.logLevel <= .debug else { return }
        let request = notification.userInfo.request
        var metadata = identity(notification.userInfo)
        metadata["http.request.method"] = .string(request.method)
        metadata["url.full"] = .string(redaction.redacting(request.url))
        write(.debug, message, metadata: metadata, request: request)
    }

    /// What the logger's metadata provider gives for an entry of the task that sent `request`: with the
    /// task's trace context bound as the task-local `ServiceContext.current`, where a provider looks for
    /// it (handlers run on the session's event queue, where the caller's own context no longer exists).
    private func providedMetadata(for request: RequestSummary?) -> Logger.Metadata {
        guard let provider = logger.metadataProvider else { return [:] }
        guard let context = request?.serviceContext else { return provider.get() }
        return ServiceContext.withValue(context) { provider.get() }
    }

    /// The task's identity, in a dictionary made with room for the fields an entry adds to it (growing one
    /// from two fields to eight rehashed it twice, most of an entry's cost).
    private func identity(_ event: TaskLifecycleEvent) -> Logger.Metadata {
        Self.identity(session: event.sessionIdentifier, task: event.taskIdentifier)
    }

    private func identity(_ completion: TaskCompletion) -> Logger.Metadata {
        Self.identity(session: completion.sessionIdentifier, task: completion.taskIdentifier)
    }

    private static func identity(session: Int, task: Int) -> Logger.Metadata {
        var metadata = Logger.Metadata(minimumCapacity: 12)
        metadata["herald.session.id"] = .stringConvertible(session)
        metadata["herald.task.id"] = .stringConvertible(task)
        return metadata
    }

    /// `text` with its control characters escaped: CR, LF and tab as `\r`, `\n` and `\t`, the other C0 and C1
    /// controls and DEL as `\u{…}`. For what a server controls (header names and values, error messages that quote
    /// them): a log backend that writes metadata as it is (swift-log's `StreamLogHandler`) would otherwise let a
    /// bare CR or an escape sequence forge or hide a line on a terminal or in a file.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\r": escaped += "\\r"
            case "\n": escaped += "\\n"
            case "\t": escaped += "\\t"
            case _ where isControl(scalar): escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Seconds with millisecond precision, such as `"0.125"`. Built from whole milliseconds rather than with
    /// `String(format:)`, which goes through Foundation's formatter for every completion logged.
    static func seconds(_ interval: TimeInterval) -> String {
        let milliseconds = (interval * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return "\(interval)" }
        let whole = Int64(milliseconds)
        let magnitude = whole.magnitude
        let fraction = magnitude % 1000
        let padding = fraction < 10 ? "00" : fraction < 100 ? "0" : ""
        return "\(whole < 0 ? "-" : "")\(magnitude / 1000).\(padding)\(fraction)"
    }
}
