import Foundation
import HeraldNotifications

/// The payload of ``HeraldNotifications/NotificationName/eventSourceWillReconnect``.
public struct EventSourceReconnection: Sendable {
    /// The identifier of the task whose connection ended, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// The event stream's request: method, credential-redacted URL, header fields and trace context.
    public let request: RequestSummary
    /// When the connection was found ended.
    public let date: Date
    /// The connection about to be made: `2` for the first reconnection, `3` for the second, and so on.
    public let attempt: Int
    /// Why the connection ended: its transport error, or `nil` when the server ended the stream.
    public let error: HeraldError?
    /// The `Last-Event-ID` the next connection sends; empty when none is sent.
    public let lastEventID: String
    /// How long Herald waits before connecting again, in seconds: the stream's `retry`, or the default, and
    /// longer after connections in a row that failed, or ended at once without an event (see
    /// ``ServerSentEvents``).
    public let delay: TimeInterval

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - taskIdentifier: The identifier of the task whose connection ended.
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - request: The event stream's request.
    ///   - date: When the connection was found ended.
    ///   - attempt: The connection about to be made.
    ///   - error: Why the connection ended, if it failed.
    ///   - lastEventID: The `Last-Event-ID` the next connection sends.
    ///   - delay: The wait before connecting again, in seconds.
    public init(
        taskIdentifier: Int, sessionIdentifier: Int, request: RequestSummary, date: Date, attempt: Int,
        error: HeraldError?, lastEventID: String, delay: TimeInterval
    ) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.request = request
        self.date = date
        self.attempt = attempt
        self.error = error
        self.lastEventID = lastEventID
        self.delay = delay
    }
}

extension NotificationName where UserInfo == EventSourceReconnection {
    /// An event stream's connection ended and Herald will connect again (`herald.eventsource.reconnect`).
    /// Object: the task whose connection ended.
    ///
    /// Each connection of ``SessionManager/events(for:options:)`` is a streamed data task of its own, posting
    /// `taskDidResume` and `taskDidComplete`. This is posted once per reconnection, after the ended task's
    /// completion step and before the delay starts, so before the next connection's `taskDidResume`; it is
    /// not ordered against the ended task's own `taskDidComplete`, which may come just before or just after.
    public static let eventSourceWillReconnect = NotificationName<EventSourceReconnection>(
        "herald.eventsource.reconnect")
}
