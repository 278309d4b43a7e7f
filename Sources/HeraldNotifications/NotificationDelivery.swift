import Dispatch

/// Where and when an observer's handler runs.
///
/// Whatever the delivery, each observer receives the notifications posted from one thread in the order
/// they were posted. See <doc:DeliveryAndOrdering>.
public enum NotificationDelivery: Sendable {
    /// Synchronously, on the thread that posts, before ``NotificationHub/post(_:object:userInfo:)``
    /// returns (Foundation's `queue: nil`). This is the default.
    ///
    /// A notification posted from inside a handler is delivered after the current one has reached all
    /// its observers, never nested inside it.
    case posting

    /// Asynchronously, on the given queue, one notification at a time and in post order for this
    /// observer, even when the queue is concurrent.
    ///
    /// Each observation has its own mailbox and schedules at most one block on `queue` at a time, so
    /// its handler never runs concurrently with itself. Different observations on the same concurrent
    /// queue may run in parallel.
    case queue(DispatchQueue)
}
