import Foundation
import HeraldNotifications

/// The payload of ``HeraldNotifications/NotificationName/taskWillRetry``: one failed attempt of a task
/// that its ``RequestRetrier`` decided to send again.
public struct TaskRetry: Sendable {
    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// The task's request: method, credential-redacted URL, header fields and trace context.
    public let request: RequestSummary
    /// When the retrier decided to retry.
    public let date: Date
    /// The attempt about to be made: `2` for the first retry, `3` for the second, and so on (the first
    /// attempt is the one `taskDidResume` started).
    public let attempt: Int
    /// Why the previous attempt failed: its transport error, or ``HeraldError/Code/unacceptableStatusCode``
    /// (with ``HeraldError/statusCode``) when the server answered with a status of 400 or more.
    public let error: HeraldError
    /// The failed attempt's response head, when one arrived; a user name or password in its URL is redacted
    /// (`***`).
    public let response: HTTPResponse?
    /// How long Herald waits, in seconds, before the next attempt starts (0 for at once).
    public let delay: TimeInterval
    /// For a ``DownloadTask``, the byte its next attempt continues from: the attempt asks for the rest with
    /// `Range: bytes=N-` and `If-Range`, and appends a `206` to the bytes its temporary file already holds.
    /// `nil` when the next attempt starts over from byte 0 (the download can't be continued: not a `GET`, no
    /// strong `ETag` or `Last-Modified`, no byte of a `200` or `206` body yet) and for other tasks.
    public let continuesFromByte: Int64?

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    public init(
        taskIdentifier: Int,
        sessionIdentifier: Int,
        request: RequestSummary,
        date: Date,
        attempt: Int,
        error: HeraldError,
        response: HTTPResponse?,
        delay: TimeInterval,
        continuesFromByte: Int64? = nil
    ) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.request = request
        self.date = date
        self.attempt = attempt
        self.error = error
        self.response = response
        self.delay = delay
        self.continuesFromByte = continuesFromByte
    }

    /// How much of ``delay`` is left at `now`: the delay less the time since ``date``, never below 0.
    ///
    /// An observer that times the delay (to stop counting the task as active while it waits) should start
    /// from this, not from ``delay``: a notification delivered on a queue of the observer's own arrives
    /// later than it was posted, by as much as that queue is behind.
    /// - Parameter now: The moment to measure at; default the current time.
    public func remainingDelay(at now: Date = Date()) -> TimeInterval {
        guard delay > 0 else { return 0 }
        return max(0, delay - max(0, now.timeIntervalSince(date)))
    }
}

extension NotificationName where UserInfo == TaskRetry {
    /// A task's attempt failed and the task will be sent again (`herald.task.retry`). Object: the task.
    ///
    /// Posted between the task's `taskDidResume` and its `taskDidComplete`, once per retry, when the
    /// retrier has decided and before the delay starts. The task stays one task: it is not resumed again
    /// (no second `taskDidResume`), and it completes once.
    public static let taskWillRetry = NotificationName<TaskRetry>("herald.task.retry")
}
