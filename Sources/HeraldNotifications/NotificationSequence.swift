import Synchronization

/// The notifications posted under one name, as an asynchronous sequence.
///
/// Created by ``NotificationHub/notifications(named:object:bufferingPolicy:)``. Observing starts when
/// the sequence is created, so notifications posted before iteration begins are buffered. Notifications
/// arrive in post order for each posting thread. The buffer is bounded by the sequence's
/// ``NotificationBufferingPolicy``; notifications that do not fit are dropped and counted in
/// ``droppedCount``.
///
/// The sequence never finishes by itself. Iteration ends (`next()` returns `nil`) when the task iterating
/// it is cancelled; the observer is then removed. It is also removed when the sequence and its iterator
/// are released without being iterated to the end.
///
/// A sequence supports one iterator; create another sequence for another consumer.
public struct NotificationSequence<UserInfo: Sendable>: AsyncSequence, Sendable {
    /// The notifications delivered.
    public typealias Element = TypedNotification<UserInfo>
    /// A notification sequence never throws.
    public typealias Failure = Never

    let stream: AsyncStream<Element>
    let drops: DropCounter

    /// The number of notifications dropped so far because the buffer was full.
    ///
    /// With ``NotificationBufferingPolicy/bufferingNewest(_:)`` these were the oldest buffered
    /// notifications; with ``NotificationBufferingPolicy/bufferingOldest(_:)`` they were the arriving
    /// ones.
    public var droppedCount: Int { drops.count }

    /// Creates the sequence's iterator.
    ///
    /// - Returns: The iterator. Call this once per sequence.
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator())
    }

    /// Iterates a ``NotificationSequence``.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Element>.Iterator

        /// Waits for the next notification.
        ///
        /// - Returns: The next notification, or `nil` once the iterating task has been cancelled.
        public mutating func next() async -> Element? {
            let element = await base.next()
            // The stream hands out what it buffered even after the iterating task was cancelled (asked in a
            // cancelled task, it removes the observer and then empties its buffer): the sequence ends at once.
            return Task.isCancelled ? nil : element
        }

        /// Waits for the next notification, staying on the caller's actor.
        ///
        /// - Parameter actor: The caller's actor, if any.
        /// - Returns: The next notification, or `nil` once the iterating task has been cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            let element = await base.next(isolation: actor)
            return Task.isCancelled ? nil : element
        }
    }
}

/// Counts the notifications a sequence dropped; shared by the sequence and its observer's handler.
final class DropCounter: Sendable {
    private let value = Atomic<Int>(0)

    var count: Int { value.load(ordering: .relaxed) }

    func increment() {
        value.wrappingAdd(1, ordering: .relaxed)
    }
}
