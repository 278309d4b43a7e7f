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
    /// How many notifications were ever put in the mailbox.
    @usableFromInline var enqueued: UInt64 = 0
    /// How many of them the handler has returned from (or that were discarded by a cancel).
    var handled: UInt64 = 0
    /// Hub drains waiting for `handled` to reach a count.
    var barriers: [(count: UInt64, barrier: DrainBarrier)] = []

    @usableFromInline init() {}

    @usableFromInline mutating func takePending() -> [TypedNotification<UserInfo>] {
        var taken: [TypedNotification<UserInfo>] = []
        swap(&taken, &pending)
        return taken
    }

    /// Removes and returns the barriers waiting for at most `count` handled notifications.
    mutating func takeBarriers(reachedBy count: UInt64) -> [DrainBarrier] {
        guard !barriers.isEmpty else { return [] }
        var reached: [DrainBarrier] = []
        barriers.removeAll { waiting in
            guard waiting.count <= count else { return false }
            reached.append(waiting.barrier)
            return true
        }
        return reached
    }
}

extension Observation {
    @inlinable
    func enqueue(_ notification: TypedNotification<UserInfo>, on queue: DispatchQueue) {
        let mustSchedule = mailbox.withLock { mailbox in
            mailbox.pending.append(notification)
            mailbox.enqueued &+= 1
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
        // Marks the thread as inside a handler, for `cancel()` and the drains, which must not wait for it.
        let thread = PostingThread.current()
        thread.queueHandlerDepth += 1
        defer { thread.queueHandlerDepth -= 1 }
        var batch: [TypedNotification<UserInfo>] = []
        var handledInBatch = 0
        var reached: [DrainBarrier] = []
        while true {
            let isEmpty = mailbox.withLock { mailbox in
                mailbox.handled &+= UInt64(handledInBatch)
                reached = mailbox.takeBarriers(reachedBy: isCancelled ? .max : mailbox.handled)
                if mailbox.pending.isEmpty || isCancelled {
                    mailbox.isDraining = false
                    batch = mailbox.takePending()
                    return true
                }
                swap(&batch, &mailbox.pending)
                return false
            }
            for barrier in reached { barrier.arrive() }
            reached.removeAll()
            if isEmpty { return }  // `batch` (if anything) is released here, outside the lock.
            handledInBatch = 0
            for notification in batch {
                // Dekker-style with `cancel()`: store the flag, then read `cancelled`; cancel stores
                // `cancelled`, then waits while the flag is set. One of the two sees the other.
                runningQueuedHandler.store(true, ordering: .sequentiallyConsistent)
                if isCancelled {
                    runningQueuedHandler.store(false, ordering: .releasing)
                    break
                }
                handler(notification)
                runningQueuedHandler.store(false, ordering: .releasing)
                handledInBatch += 1
            }
            // Keep the capacity: in a steady stream the two buffers swap back and forth without allocating.
            batch.removeAll(keepingCapacity: true)
        }
    }

    @usableFromInline func holdUntilHandled(_ barrier: DrainBarrier) -> Bool {
        mailbox.withLock { mailbox in
            // Idle: everything enqueued has been handled. Cancelled: nothing more will be.
            guard mailbox.isDraining, !isCancelled else { return false }
            mailbox.barriers.append((mailbox.enqueued, barrier))
            return true
        }
    }
}
