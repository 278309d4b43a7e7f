#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch

/// What other threads were delivering at one moment: the passes under way and the posts queued inside
/// handlers, per posting thread of a hub. Waiting for it waits for those deliveries only, never for
/// passes that start later.
struct PassWait: Sendable {
    private var passes: [(slot: SnapshotSlot, marker: UInt)] = []
    private var deferred: [(slot: SnapshotSlot, queued: UInt64)] = []

    /// Reads the posting threads' state. Sequentially consistent, after the caller's own store (a
    /// cancelled flag): a pass that began before that store is seen here, any later one sees the flag.
    init(slots: [SnapshotSlot], includingDeferredPosts: Bool) {
        for slot in slots {
            if let marker = slot.passMarker(first: true) { passes.append((slot, marker)) }
            guard includingDeferredPosts else { continue }
            let queued = slot.deferredQueued.load(ordering: .acquiring)
            if slot.deferredDelivered.load(ordering: .acquiring) != queued { deferred.append((slot, queued)) }
        }
    }

    /// Whether every pass seen has ended and every post seen queued has been delivered.
    var isOver: Bool {
        passes.allSatisfy { $0.slot.passMarker(first: false) != $0.marker }
            && deferred.allSatisfy { $0.slot.deferredDelivered.load(ordering: .acquiring) &- $0.queued < 1 << 63 }
    }

    /// Blocks the calling thread until ``isOver``: a few yields, then sleeps growing to 1 ms. A pass
    /// normally lasts nanoseconds to microseconds; waiting on a condition instead would cost every post
    /// a second sequentially consistent store.
    func wait() {
        var attempt = 0
        while !isOver {
            Self.pause(attempt)
            attempt += 1
        }
    }

    /// One turn of a blocking wait: yields the processor for the first 64 turns, then sleeps for a time
    /// growing from 10 µs to 1 ms.
    static func pause(_ attempt: Int) {
        if attempt < 64 {
            sched_yield()
        } else {
            usleep(UInt32(min(1_000, 10 << min(attempt - 64, 7))))
        }
    }

    /// Calls `completion` on a global queue once ``isOver`` (at once, on this thread, if it already is).
    func notify(_ completion: @escaping @Sendable () -> Void) {
        guard !isOver else { return completion() }
        Self.poll(self, attempt: 0, completion)
    }

    private static func poll(_ wait: PassWait, attempt: Int, _ completion: @escaping @Sendable () -> Void) {
        let delay = DispatchTimeInterval.microseconds(min(1_000, 10 << min(attempt, 7)))
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            if wait.isOver { completion() } else { poll(wait, attempt: attempt + 1, completion) }
        }
    }
}
