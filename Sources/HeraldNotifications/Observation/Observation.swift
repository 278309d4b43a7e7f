import Dispatch
import Synchronization

/// One registered handler: what it observes, how it is delivered to, and whether it was cancelled.
@usableFromInline
final class Observation<UserInfo: Sendable>: AnyObservation {
    @usableFromInline let sequenceNumber: UInt64
    @usableFromInline let nameIndex: Int
    @usableFromInline let senderID: ObjectIdentifier?
    /// Never read: it is here for what an unowned reference does to the sender's memory. Observing never
    /// keeps the sender alive (its deinit runs when its last strong reference goes), but the runtime keeps
    /// an object's memory allocated until its last unowned reference is gone, so no other object can be
    /// given the sender's address while this observation exists, and matching by `senderID` alone is
    /// exact. A weak reference would give the sender a side table instead, which moves every retain and
    /// release of the sender, the post's own included, onto the runtime's slow path.
    private unowned let pinnedSender: (any AnyObject & Sendable)?
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
        self.pinnedSender = sender
        switch delivery {
        case .posting: self.queue = nil
        case .queue(let queue): self.queue = queue
        }
        self.handler = handler
    }

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
