import Dispatch
import Synchronization

/// One registered handler: what it observes, how it is delivered to, and whether it was cancelled.
@usableFromInline
final class Observation<UserInfo: Sendable>: AnyObservation {
    @usableFromInline let sequenceNumber: UInt64
    @usableFromInline let nameIndex: Int
    @usableFromInline let senderID: ObjectIdentifier?
    /// Weak so that observing a sender never keeps it alive. Delivery compares identity with `===`:
    /// a new object allocated at a dead sender's address has the same `ObjectIdentifier` but never
    /// matches, because this reference reads `nil` once the original sender is gone.
    @usableFromInline weak let sender: (any AnyObject & Sendable)?
    @usableFromInline let queue: DispatchQueue?
    @usableFromInline let handler: @Sendable (TypedNotification<UserInfo>) -> Void
    @usableFromInline let cancelled = Atomic<Bool>(false)
    @usableFromInline let mailbox = Locked(Mailbox<UserInfo>())
    /// Set by a `.queue` drain block from just before its cancelled check until the handler returns.
    @usableFromInline let runningQueuedHandler = Atomic<Bool>(false)

    init(
        sequenceNumber: UInt64,
        nameIndex: Int,
        sender: (any AnyObject & Sendable)?,
        delivery: NotificationDelivery,
        handler: @escaping @Sendable (TypedNotification<UserInfo>) -> Void
    ) {
        self.sequenceNumber = sequenceNumber
        self.nameIndex = nameIndex
        self.senderID = sender.map { ObjectIdentifier($0) }
        self.sender = sender
        switch delivery {
        case .posting: self.queue = nil
        case .queue(let queue): self.queue = queue
        }
        self.handler = handler
    }

    @usableFromInline var isSenderGone: Bool { senderID != nil && sender == nil }

    /// Sequentially consistent: paired with the posting thread's pass marker and the `.queue` drain
    /// block's `runningQueuedHandler` (see `ObservationToken.cancel()`). A plain load on x86 and arm64.
    @inlinable var isCancelled: Bool { cancelled.load(ordering: .sequentiallyConsistent) }

    @usableFromInline var isQueued: Bool { queue != nil }

    @usableFromInline var isRunningQueuedHandler: Bool { runningQueuedHandler.load(ordering: .sequentiallyConsistent) }

    @usableFromInline func markCancelled() -> Bool {
        let (exchanged, _) = cancelled.compareExchange(
            expected: false, desired: true, ordering: .sequentiallyConsistent)
        if exchanged {
            // Release queued payloads now rather than when the last drain block runs; outside the lock,
            // because a payload's deinit is user code. A cancelled observer holds no drain back.
            let (discarded, barriers) = mailbox.withLock { ($0.takePending(), $0.takeBarriers(reachedBy: .max)) }
            _ = consume discarded
            for barrier in barriers { barrier.arrive() }
        }
        return exchanged
    }

    /// Delivers one notification according to the observation's delivery.
    ///
    /// Called by the hub without any lock held.
    @inlinable @inline(__always)
    func deliver(_ notification: TypedNotification<UserInfo>) {
        guard !isCancelled else { return }
        if let queue {
            enqueue(notification, on: queue)
        } else {
            handler(notification)
        }
    }
}
