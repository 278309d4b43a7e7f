import CHeraldThread

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Per-thread state: the queue that makes delivery breadth-first, and the registry snapshots posts read.
///
/// **Breadth-first.**
/// A post made while this thread is already delivering (that is, from inside a `.posting` handler) is
/// queued here and delivered by the outermost post once the current notification has reached all its
/// observers. It must be thread-local, not a `@TaskLocal`: handlers are synchronous and may run on any
/// thread, and the outermost post on a thread is the one that drains.
@usableFromInline
final class PostingThread {
    // Thread-confined, so the dynamic exclusivity checks (a TLS lookup each) buy nothing here.
    @exclusivity(unchecked) private var isDelivering = false
    @exclusivity(unchecked) private var pending: [(PostingThread) -> Void] = []

    /// Delivers one post of `hub` from the calling thread: now, with the thread's snapshot of the hub's
    /// registry, or — if the thread is already delivering — after the current delivery, with the
    /// snapshot current then.
    ///
    /// One non-inlined call per post: the thread state, the breadth-first check and the snapshot are
    /// all handled here.
    ///
    /// - Parameters:
    ///   - hub: The hub posted to.
    ///   - deliver: Hands the notification to the observers in a snapshot.
    ///   - deferred: Makes an escaping copy of `deliver`, called only when the post must wait.
    @usableFromInline
    static func post(
        to hub: NotificationHub,
        _ deliver: (Snapshot) -> Void,
        deferred: () -> ((Snapshot) -> Void)
    ) {
        guard let state = hn_posting_thread() else {
            current().post(to: hub, deliver, deferred: deferred)
            return
        }
        // The thread-specific slot owns the state until the thread exits: borrow it, no retain.
        Unmanaged<PostingThread>.fromOpaque(state)._withUnsafeGuaranteedRef {
            $0.post(to: hub, deliver, deferred: deferred)
        }
    }

    @inline(__always)
    private func post(
        to hub: NotificationHub,
        _ deliver: (Snapshot) -> Void,
        deferred: () -> ((Snapshot) -> Void)
    ) {
        if isDelivering {
            let later = deferred()
            // Counted now, so that a drain started after this call returns waits for the delivery.
            let slot = deferralSlot(for: hub)
            slot.deferredPostQueued()
            pending.append { thread in
                thread.withSnapshot(of: hub, later)
                slot.deferredPostDelivered()
                if thread.slots[Int(truncatingIfNeeded: hub.id & 3)] !== slot { slot.abandon() }
            }
            return
        }
        isDelivering = true
        withSnapshot(of: hub, deliver)
        if !pending.isEmpty { drainPending() }
        isDelivering = false
    }

    /// How many `.queue` drain blocks are running handlers on this thread (nested only if a handler
    /// drains a queue synchronously).
    @exclusivity(unchecked) var queueHandlerDepth = 0

    /// Whether the calling thread is inside a handler of any hub: a `.posting` delivery (a post is under
    /// way on this thread) or a `.queue` observer's handler.
    static var isInsideHandler: Bool {
        guard let state = hn_posting_thread() else { return false }
        return Unmanaged<PostingThread>.fromOpaque(state)._withUnsafeGuaranteedRef {
            $0.isDelivering || $0.queueHandlerDepth > 0
        }
    }

    /// The calling thread's state, created on first use.
    ///
    /// The state is found through a C thread-local (one load; `pthread_getspecific` is a call), and owned by
    /// a pthread key's slot, whose destructor releases it when the thread exits and clears the thread-local.
    static func current() -> PostingThread {
        if let state = hn_posting_thread() {
            return Unmanaged<PostingThread>.fromOpaque(state).takeUnretainedValue()
        }
        let thread = PostingThread()
        let state = Unmanaged.passRetained(thread).toOpaque()
        pthread_setspecific(postingThreadKey, state)
        hn_set_posting_thread(state)
        return thread
    }

    // MARK: Snapshots

    /// Direct-mapped by hub id: most threads post to one or two hubs.
    @exclusivity(unchecked) private var slots: ContiguousArray<SnapshotSlot?> = [nil, nil, nil, nil]

    /// Calls `body` with the registry snapshot of `hub` that a post from this thread delivers from.
    ///
    /// Lock-free while the hub's registry is unchanged: a version load and two uncontended exchanges on
    /// this thread's slot, which also mark the pass (see ``SnapshotSlot``). Takes the hub's lock once per
    /// registry change per thread.
    @inline(__always)
    private func withSnapshot(of hub: NotificationHub, _ body: (Snapshot) -> Void) {
        let index = Int(truncatingIfNeeded: hub.id & 3)
        if slots[index]?.hubID != hub.id {
            slots[index]?.abandon()  // Another hub's: released with its snapshot.
            let slot = SnapshotSlot(hubID: hub.id)
            hub.register(slot)
            slots[index] = slot
        }
        // Safety: `slots` keeps the slot alive for the whole call (it is only replaced above, and this
        // thread never re-enters `withSnapshot` while delivering), so borrow it without a retain.
        Unmanaged.passUnretained(slots[index]!)._withUnsafeGuaranteedRef { slot in
            // The pass begins here, before any observer's cancelled flag is read.
            var snapshot = slot.beginPass()
            if let taken = snapshot,
                taken._withUnsafeGuaranteedRef({ $0.version }) != hub.version.load(ordering: .sequentiallyConsistent)
            {
                taken.release()
                snapshot = nil
            }
            let current = snapshot ?? Unmanaged.passRetained(hub.currentSnapshot())
            current._withUnsafeGuaranteedRef(body)
            // Read before the put: once in the slot, the hub may take the snapshot and release it.
            let currentVersion = current._withUnsafeGuaranteedRef { $0.version }
            slot.endPass(putting: current)
            if currentVersion != hub.version.load(ordering: .sequentiallyConsistent) {
                // The registry changed during the delivery and the hub may have emptied the slot before the
                // put: make sure the stale snapshot does not stay here.
                slot.take()?.release()
            }
        }
    }

    /// The slot that counts a post of `hub` queued during a pass: this thread's slot of `hub` if it has
    /// one, otherwise a new one registered with the hub, which the deferred delivery abandons once done.
    /// Never replaces an entry of `slots`: the pass under way may be borrowing it.
    private func deferralSlot(for hub: NotificationHub) -> SnapshotSlot {
        let index = Int(truncatingIfNeeded: hub.id & 3)
        if let slot = slots[index], slot.hubID == hub.id { return slot }
        let slot = SnapshotSlot(hubID: hub.id)
        hub.register(slot)
        return slot
    }

    deinit {
        for slot in slots { slot?.abandon() }
    }

    // MARK: Breadth-first delivery

    private func drainPending() {
        // Taken a batch at a time: what a delivery posts goes to `pending` and the next batch. So does what a
        // batch's release posts — the deinit of a sender or payload whose last holder was a delivered closure —
        // which emptying `pending` in place would have mutated the array mid-removal, and lost or stranded
        // (and a drain waiting for its delivery would wait for ever).
        while !pending.isEmpty {
            var batch: [(PostingThread) -> Void] = []
            swap(&batch, &pending)
            for delivery in batch { delivery(self) }
        }
    }
}

/// The key whose slot owns each thread's ``PostingThread`` and releases it when the thread exits.
let postingThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { state in
        // A post from a later destructor of this thread makes a new state, which this runs for again.
        hn_set_posting_thread(nil)
        #if canImport(Darwin)
            Unmanaged<PostingThread>.fromOpaque(state).release()
        #else
            if let state { Unmanaged<PostingThread>.fromOpaque(state).release() }
        #endif
    }
    precondition(status == 0, "pthread_key_create failed: the process is out of thread-specific keys")
    return key
}()
