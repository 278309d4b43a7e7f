/// One server-sent event, as the WHATWG HTML standard's event-stream format dispatches it.
public struct ServerSentEvent: Sendable, Equatable, Hashable {
    /// The last event ID when the event was dispatched: set by this event's `id` field or an earlier
    /// one's (empty when none was set, or an `id` field reset it). A reconnection sends it as `Last-Event-ID`.
    public var id: String
    /// The event type: the `event` field, `"message"` when the event has none.
    public var event: String
    /// The `data` fields' values, joined with LF (`"\n"`).
    public var data: String
    /// The reconnection time a `retry` field in this event set, in milliseconds; `nil` when it had none.
    public var retry: Int?

    /// Creates an event.
    /// - Parameters:
    ///   - id: The last event ID.
    ///   - event: The event type; default `"message"`.
    ///   - data: The data.
    ///   - retry: The reconnection time this event set, in milliseconds; default none.
    public init(id: String = "", event: String = "message", data: String, retry: Int? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }
}
