/// What a ``NotificationSequence`` does with notifications that arrive while its buffer is full.
///
/// Both policies are bounded: a consumer that falls behind loses notifications, never memory. Each lost
/// notification is counted in ``NotificationSequence/droppedCount``.
public enum NotificationBufferingPolicy: Sendable {
    /// Keep the newest notifications: when the buffer already holds the given number of notifications,
    /// the oldest one is dropped to make room.
    case bufferingNewest(Int)

    /// Keep the oldest notifications: when the buffer already holds the given number of notifications,
    /// the arriving one is dropped.
    case bufferingOldest(Int)
}
