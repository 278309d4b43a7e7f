import Dispatch
import Synchronization

/// The pending notifications of one `.queue` observation.
///
/// FIFO per observation on any queue, even a concurrent one: the observation schedules at most one
/// drain block at a time (`isDraining`), and that block hands notifications to the handler in arrival
/// order.
@usableFromInline
struct Mailbox<UserInfo: Sendable>: Sendable {
    @usableFromInline var pending: [TypedNotification<UserInfo>] = []
    @usableFromInline var isDraining = false

    @usableFromInline init() {}

    @usableFromInline mutating func takePending() -> [TypedNotification<UserInfo>] {
        var taken: [TypedNotification<UserInfo>] = []
        swap(&taken, &pending)
        return taken
    }
}

extension Observation {
    @inlinable
    func enqueue(_ notification: TypedNotification<UserInfo>, on queue: DispatchQueue) {
        let mustSchedule = mailbox.withLock { mailbox in
            mailbox.pending.append(notification)
            if mailbox.isDraining { return false }
            mailbox.isDraining = true
            return true
        }
        if mustSchedule {
            queue.async { self.drain() }
        }
    }

    /// Runs on the observation's queue; at most one drain is scheduled or running at a time.
    @usableFromInline
    func drain() {
        var batch: [TypedNotification<UserInfo>] = []
        while true {
            let isEmpty = mailbox.withLock { mailbox in
                if mailbox.pending.isEmpty || isCancelled {
                    mailbox.isDraining = false
                    batch = mailbox.takePending()
                    return true
                }
                swap(&batch, &mailbox.pending)
                return false
            }
            if isEmpty { return }  // `batch` (if anything) is released here, outside the lock.
            for notification in batch {
                if isCancelled { break }
                handler(notification)
            }
            // Keep the capacity: in a steady stream the two buffers swap back and forth without allocating.
            batch.removeAll(keepingCapacity: true)
        }
    }
}
