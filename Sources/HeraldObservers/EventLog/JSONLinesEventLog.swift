import Foundation
import Herald
import HeraldNotifications

/// Writes one JSON object per line for every lifecycle notification: an event log to pipe into
/// existing log systems (`jq`, Vector, Loki…).
///
/// Each line is an ``EventRecord``, written and flushed as soon as the notification arrives (a
/// `FileHandle` is unbuffered; a custom sink receives whole lines). Lines from different sessions never
/// interleave: writes are serialized.
///
/// ```swift
/// let log = JSONLinesEventLog(fileHandle: .standardOutput)
/// let token = log.observe(session.notificationCenter)
/// ```
public final class JSONLinesEventLog: SessionObserver {
    private let lines: OrderedDelivery<Void, String>
    private let redaction: LogRedaction

    /// Creates a log that hands each line, newline included, to `write`.
    ///
    /// `write` is called one line at a time, never concurrently, in notification order for each session.
    /// - Parameters:
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    ///   - write: The sink.
    public init(redaction: LogRedaction = .default, write: @escaping @Sendable (String) -> Void) {
        self.redaction = redaction
        self.lines = OrderedDelivery((), consumer: write)
    }

    /// Creates a log writing to a file handle, such as `FileHandle.standardOutput`.
    /// - Parameters:
    ///   - fileHandle: Where lines go; each is written with one `write` call.
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    public convenience init(fileHandle: FileHandle, redaction: LogRedaction = .default) {
        self.init(redaction: redaction) { line in
            // A closed pipe must not crash the process; the line is dropped.
            try? fileHandle.write(contentsOf: Data(line.utf8))
        }
    }

    /// Creates a log appending to a text stream, such as a `String` in a test.
    ///
    /// The stream is owned by the log from now on; `flush` is called after each line when given.
    /// - Parameters:
    ///   - stream: The stream to append to.
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    public convenience init(stream: some TextOutputStream & Sendable, redaction: LogRedaction = .default) {
        let box = Locked(stream)
        self.init(redaction: redaction) { line in box.withLock { $0.write(line) } }
    }

    /// Writes the `herald.task.resume` line.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        emit(lifecycle(notification))
    }

    /// Writes the `herald.task.suspend` line.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        emit(lifecycle(notification))
    }

    /// Writes the `herald.task.complete` line.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let completion = notification.userInfo
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(completion.date),
            session: completion.sessionIdentifier, task: completion.taskIdentifier)
        addRequest(completion.request, to: &record)
        record.status = completion.response?.statusCode
        record.error = completion.error?.code.description
        record.errorMessage = completion.error?.message
        record.finalURL = completion.finalURL.map(redaction.redacting)
        record.file = completion.assetPath?.path
        if let metrics = completion.metrics {
            record.bytesSent = metrics.requestBodyBytes
            record.bytesReceived = metrics.responseBodyBytes
            record.duration = (metrics.total * 1000).rounded() / 1000
            record.redirects = metrics.redirectCount
        }
        emit(record)
    }

    /// Writes the `herald.session.invalidate` line.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(notification.userInfo.date),
            session: notification.userInfo.sessionIdentifier)
        record.error = notification.userInfo.error?.code.description
        record.errorMessage = notification.userInfo.error?.message
        emit(record)
    }

    /// Writes the `herald.download.move-file-failed` line: the error, the kept temporary file and the
    /// destination it could not reach.
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        let failure = notification.userInfo
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(failure.date),
            session: failure.sessionIdentifier, task: failure.taskIdentifier)
        addRequest(failure.request, to: &record)
        record.error = failure.error.code.description
        record.errorMessage = failure.error.message
        record.file = failure.sourceURL.path
        record.destination = failure.destinationURL.path
        emit(record)
    }

    /// Writes the `herald.task.retry` line: the attempt about to start, the delay before it, and why
    /// the previous attempt failed.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let retry = notification.userInfo
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(retry.date), session: retry.sessionIdentifier,
            task: retry.taskIdentifier)
        addRequest(retry.request, to: &record)
        record.status = retry.response?.statusCode
        record.error = retry.error.code.description
        record.errorMessage = retry.error.message
        record.attempt = retry.attempt
        record.delay = (retry.delay * 1000).rounded() / 1000
        emit(record)
    }

    // MARK: - helpers

    private func lifecycle(_ notification: TypedNotification<TaskLifecycleEvent>) -> EventRecord {
        let event = notification.userInfo
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(event.date), session: event.sessionIdentifier,
            task: event.taskIdentifier)
        addRequest(event.request, to: &record)
        return record
    }

    /// The task's method and redacted URL, from the payload.
    private func addRequest(_ request: RequestSummary, to record: inout EventRecord) {
        record.method = request.method
        record.url = redaction.redacting(request.url)
    }

    private func emit(_ record: EventRecord) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding an EventRecord (strings, integers, finite doubles) cannot fail; if it somehow did, the
        // line is skipped rather than crashing the observed program.
        guard let data = try? encoder.encode(record), let json = String(data: data, encoding: .utf8) else { return }
        lines.submit([json + "\n"])
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
