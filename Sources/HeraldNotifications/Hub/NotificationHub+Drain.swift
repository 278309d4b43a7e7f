import Dispatch
import Synchronization

extension NotificationHub {
    /// Returns once everything posted on this hub before the call has been delivered to every observer
    /// that was registered when it was posted.
    ///
    /// What "delivered" means depends on the observer's delivery:
    /// - ``NotificationDelivery/posting``: its handler has returned. That includes notifications posted
    ///   from inside a handler, which the posting thread delivers after the current one.
    /// - ``NotificationDelivery/queue(_:)``: its handler has returned from every notification that was in
    ///   its mailbox, however slow the handler and whatever the queue (serial or concurrent).
    /// - ``NotificationSequence``: the notification is in the sequence's buffer (or was counted in
    ///   ``NotificationSequence/droppedCount``); the drain does not wait for the consumer to read it.
    ///
    /// A post running on another thread at the same time as the call may or may not be waited for; one
    /// that returned before the call always is. An observer cancelled meanwhile is not waited for.
    ///
    /// Never blocks a thread: it suspends the calling task. It can't deadlock by being called from a task
    /// that a handler started: it waits for that handler to return, and the handler does not wait for it.
    /// A handler that blocks its thread until a drain finishes (a semaphore, for example) does deadlock
    /// when that drain waits for the same handler, which is why the hub offers no blocking drain. A
    /// `.queue` observer whose queue never runs (suspended, or blocked) holds the drain back until it
    /// does.
    public func drain() async {
        await withCheckedContinuation { continuation in
            drain { continuation.resume() }
        }
    }

    /// Calls `completion` once everything posted before the call has been delivered, as ``drain()``
    /// does; on the calling thread if nothing is in flight, otherwise on a global queue or on the queue
    /// of the last `.queue` observer to finish. For synchronous waits (with a timeout) in other modules.
    ///
    /// - Parameter completion: Called exactly once.
    package func drain(then completion: @escaping @Sendable () -> Void) {
        let slots = registry.withLock { $0.postingSlots }
        // First the posting threads: passes under way end, posts queued inside handlers are delivered, so
        // every `.queue` observer's mailbox holds what it must. Then the mailboxes.
        PassWait(slots: slots, includingDeferredPosts: true).notify { [self] in
            let observations = registry.withLock { $0.queuedObservations }
            let forwarding = forwardingQueues.withLock { Array($0.values) }
            let barrier = DrainBarrier(completion: completion)
            for observation in observations {
                barrier.hold()
                if !observation.holdUntilHandled(barrier) { barrier.arrive() }
            }
            for queue in forwarding {
                barrier.hold()
                queue.async { barrier.arrive() }  // After every block forwarded before.
            }
            barrier.arrive()
        }
    }

    /// Whether the calling thread is running a handler of any hub, `.posting` or `.queue`.
    ///
    /// A blocking wait for a delivery must not start there: the delivery may be waiting for this very
    /// handler to return.
    package static var isHandlerRunningOnCurrentThread: Bool {
        PostingThread.isInsideHandler
    }

    /// Runs `body` as a handler: for as long as it runs, the thread counts as inside a handler (see
    /// ``isHandlerRunningOnCurrentThread``). For observers that forward notifications to a queue of
    /// their own and call user code there.
    ///
    /// - Parameter body: The forwarded handler call.
    package static func runAsHandler(_ body: () -> Void) {
        let thread = PostingThread.current()
        thread.queueHandlerDepth += 1
        defer { thread.queueHandlerDepth -= 1 }
        body()
    }

    /// After `observation` was marked cancelled: waits until no other thread can still enter its handler.
    ///
    /// A thread that is inside a handler does not wait: two handlers cancelling each other's tokens on
    /// two threads would otherwise wait for each other forever.
    func waitUntilNotEntered(_ observation: any AnyObservation) {
        guard !PostingThread.isInsideHandler else { return }
        if observation.isQueued {
            var attempt = 0
            while observation.isRunningQueuedHandler {
                PassWait.pause(attempt)
                attempt += 1
            }
            return
        }
        let slots = registry.withLock { $0.postingSlots }
        PassWait(slots: slots, includingDeferredPosts: false).wait()
    }

    /// Makes drains wait for `queue` too: for observers whose `.posting` handlers forward each
    /// notification to a serial queue of their own (as `addObserver(_:delivery:)` of Herald's
    /// `SessionObserver` does, to keep one order across several names). A drain then waits until
    /// everything `queue` was given before has run.
    ///
    /// - Parameter queue: A serial queue.
    /// - Returns: A token that stops the drains waiting for `queue` when cancelled or released.
    package func drainAlso(_ queue: DispatchQueue) -> ObservationToken {
        let key = Self.nextForwardingKey.wrappingAdd(1, ordering: .relaxed).oldValue
        forwardingQueues.withLock { $0[key] = queue }
        return ObservationToken { [weak self] in
            _ = self?.forwardingQueues.withLock { $0.removeValue(forKey: key) }
        }
    }

    private static let nextForwardingKey = Atomic<UInt64>(0)
}
