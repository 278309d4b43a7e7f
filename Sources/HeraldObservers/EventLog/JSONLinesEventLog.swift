import Foundation
import Herald
import HeraldNotifications

/// Writes one JSON object per line for every lifecycle notification: an event log to pipe into
/// existing log systems (`jq`, Vector, Loki…).
///
/// It records what a `SessionObserver` receives. An event stream's `eventSourceWillReconnect` is not one of
/// them: each reconnection shows as the ended connection's complete and the next one's resume; observe the name
/// on the center for its attempt, delay and `Last-Event-ID`.
///
/// Each line is an ``EventRecord``. The handlers only build the record: encoding and writing happen on
/// a thread of the log's own, in the order the notifications arrived, so a slow disk or pipe never
/// delays the session that posts. The lines of one log never interleave or get cut, even when many sessions
/// share it: it writes one line at a time, whole. That holds per log: two logs on one file or stream each write
/// from their own thread, and a line of one may land inside a line of the other (a write of more than 4,096
/// bytes to a pipe is not atomic), so share one log among the sessions that write to one file or stream. Call
/// ``flush()`` before the program exits — after `SessionManager.invalidateAndWait(cancelingTasks:)`, every line
/// of the session is then written.
///
/// When the output is closed (`activity-counter … | head -1`: the pipe's reader has gone) the log ends
/// quietly: later lines are dropped, ``hasEnded`` becomes `true`, and the process is not killed by
/// `SIGPIPE`. When it stays open but isn't read (a reader that stopped without closing the pipe), at most
/// 65,536 lines wait for it; later ones are dropped and counted in ``droppedLines``.
///
/// ```swift
/// let log = JSONLinesEventLog(fileHandle: .standardOutput)
/// let token = log.observe(session.notificationCenter)
/// ```
public final class JSONLinesEventLog: SessionObserver {
    private let lines: SinkWriter<EventRecord>
    private let redaction: LogRedaction

    /// Creates a log that hands each line, newline included, to `write`.
    ///
    /// `write` is called on the log's own thread, one line at a time, never concurrently, in the order
    /// the notifications arrived.
    /// - Parameters:
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    ///   - write: The sink.
    public convenience init(redaction: LogRedaction = .default, write: @escaping @Sendable (String) -> Void) {
        self.init(
            redaction: redaction,
            writeLine: { line in
                write(line)
                return true
            })
    }

    /// Creates a log writing to a file handle, such as `FileHandle.standardOutput`.
    ///
    /// Each line goes out with `write(2)` calls until all of it is written. Once the descriptor refuses
    /// a write (`EPIPE` when the reader of a pipe has gone), the log has ended: later lines are dropped.
    /// - Parameters:
    ///   - fileHandle: Where lines go. The log does not close it.
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    public convenience init(fileHandle: FileHandle, redaction: LogRedaction = .default) {
        let descriptor = fileHandle.fileDescriptor
        self.init(
            redaction: redaction,
            writeLine: { line in
                withExtendedLifetime(fileHandle) { FileDescriptorOutput.write(line, to: descriptor) == nil }
            })
    }

    /// Creates a log appending to a text stream, such as a `String` in a test.
    ///
    /// The stream is owned by the log from now on and written on the log's own thread.
    /// - Parameters:
    ///   - stream: The stream to append to.
    ///   - redaction: What to redact in URLs; default ``LogRedaction/default``.
    public convenience init(stream: some TextOutputStream & Sendable, redaction: LogRedaction = .default) {
        let box = Locked(stream)
        self.init(redaction: redaction) { line in box.withLock { $0.write(line) } }
    }

    init(
        redaction: LogRedaction, capacity: Int = SinkCapacity.default, writeLine: @escaping @Sendable (String) -> Bool
    ) {
        self.redaction = redaction
        self.lines = SinkWriter(name: "herald.events", capacity: capacity) { record in
            guard let line = Self.encode(record) else { return true }
            return writeLine(line)
        }
    }

    /// Returns once every line of the notifications this log received before the call has been written
    /// (or dropped, the output having closed).
    ///
    /// Call it before exiting, after the notifications have arrived:
    /// `await session.invalidateAndWait()` then `await log.flush()` leaves no line of the session
    /// unwritten. Suspends the calling task; never blocks a thread.
    public func flush() async {
        await lines.flush()
    }

    /// Whether the output closed (a write failed, for example with `EPIPE`): lines are now dropped.
    public var hasEnded: Bool { lines.hasEnded }

    /// How many lines were dropped because 65,536 were already waiting for an output that didn't keep up.
    public var droppedLines: Int { lines.droppedCount }

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
        record.errorMessage = completion.error.map {
            redaction.redacting($0.message, secretsOf: [completion.request.url] + ($0.url.map { [$0] } ?? []))
        }
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
        record.errorMessage = notification.userInfo.error.map {
            redaction.redacting($0.message, secretsOf: $0.url.map { [$0] } ?? [])
        }
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
        record.errorMessage = redaction.redacting(failure.error.message, secretsOf: [failure.request.url])
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
        record.errorMessage = redaction.redacting(
            retry.error.message, secretsOf: [retry.request.url] + (retry.error.url.map { [$0] } ?? []))
        record.attempt = retry.attempt
        record.delay = (retry.delay * 1000).rounded() / 1000
        emit(record)
    }

    /// Writes the `herald.task.waiting-for-connectivity` line, with the error of the attempt that found no
    /// network.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        var record = connectivityRecord(notification)
        let wait = notification.userInfo
        record.error = wait.error.code.description
        record.errorMessage = redaction.redacting(
            wait.error.message, secretsOf: [wait.request.url] + (wait.error.url.map { [$0] } ?? []))
        emit(record)
    }

    /// Writes the `herald.task.waiting-for-connectivity.end` line: a network came back and the task's attempt
    /// starts again.
    /// - Parameter notification: `taskDidEndWaitingForConnectivity`.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        emit(connectivityRecord(notification))
    }

    /// The line of a connectivity wait's start or end: its name, time, task and request.
    private func connectivityRecord(_ notification: TypedNotification<TaskConnectivityWait>) -> EventRecord {
        let wait = notification.userInfo
        var record = EventRecord(
            event: notification.name.rawValue, time: Self.timestamp(wait.date), session: wait.sessionIdentifier,
            task: wait.taskIdentifier)
        addRequest(wait.request, to: &record)
        return record
    }

    /// Writes the `herald.reachability.change` line: the new and previous status, the interface, the host.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        let change = notification.userInfo
        var record = EventRecord(event: notification.name.rawValue, time: Self.timestamp(change.date), session: nil)
        record.reachability = change.status.label
        record.previousReachability = change.previousStatus.label
        record.interface = change.status.interface?.name
        record.host = change.host
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
        lines.submit(record)
    }

    /// The record's line, newline included; on the log's thread.
    private static func encode(_ record: EventRecord) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A duration or delay that is not finite (a payload made by hand) is written as a string, not lost: JSON
        // has no number for it.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        // Encoding an EventRecord (strings, integers, doubles) cannot fail now; if it somehow did, the line is
        // skipped rather than crashing the observed program.
        guard let data = try? encoder.encode(record), let json = String(data: data, encoding: .utf8) else { return nil }
        return json + "\n"
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
