import Synchronization

/// One posting thread's cached registry snapshot of one hub, which the hub can take back, and the marker of
/// the pass (one delivery of one post) the thread has under way.
///
/// Posts read the registry through this cache instead of the hub's lock, so posting from many threads
/// contends on nothing. The owning thread takes the snapshot out for the length of a pass and puts it back;
/// the hub, when its registry changes, empties every slot registered with it. That way a thread that stops
/// posting does not keep removed observers (and what their handlers capture) alive.
///
/// **One word.** The slot's state is one atomic word: the snapshot (a retained pointer, even), or 0, or —
/// while a pass is under way — an odd marker unique to that pass. Taking the snapshot out and announcing
/// the pass are then one exchange, and putting it back and ending the pass another: a post costs two
/// locked instructions on this slot, not three.
///
/// The two sides race only in one way: the thread puts back a snapshot just as the hub changes. Both use
/// sequentially consistent operations — the thread stores, then reads the version; the hub bumps the
/// version, then empties the slot — so at least one of them sees the other and takes the stale snapshot
/// out; the slot's atomic operations make sure only one of them releases it. The hub never empties a slot
/// whose word is a pass marker: the snapshot is with the thread then.
@usableFromInline
final class SnapshotSlot: Sendable {
    /// A retained `Unmanaged<Snapshot>` as a bit pattern (even: objects are aligned), 0, or an odd pass marker.
    private let word = Atomic<UInt>(0)
    /// How many passes the owning thread has begun; its markers are `passes << 1 | 1`. Owning thread only.
    private nonisolated(unsafe) var passes: UInt = 0

    @usableFromInline let hubID: UInt64
    /// Set when the owning thread exits or reuses its cache entry for another hub; the hub then forgets
    /// the slot. (The hub holds slots strongly: a weak reference would move every retain of the slot on
    /// the post path to the slow, side-table path.)
    private let abandoned = Atomic<Bool>(false)

    var isAbandoned: Bool { abandoned.load(ordering: .relaxed) }

    func abandon() {
        abandoned.store(true, ordering: .relaxed)
        take()?.release()
    }

    /// The posts of this hub the owning thread queued for later (posted from inside a handler), and how
    /// many of them it has delivered. Only the owning thread writes them; ``NotificationHub/drain()``
    /// waits until the second reaches what the first was when it was called.
    let deferredQueued = Atomic<UInt64>(0)
    let deferredDelivered = Atomic<UInt64>(0)

    init(hubID: UInt64) {
        self.hubID = hubID
    }

    /// Whether a post counted in ``deferredQueued`` has not been delivered yet.
    var hasUndeliveredDeferredPosts: Bool {
        deferredDelivered.load(ordering: .acquiring) != deferredQueued.load(ordering: .acquiring)
    }

    /// Counts a post queued for later. Owning thread only.
    func deferredPostQueued() {
        deferredQueued.store(deferredQueued.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    /// Counts a queued post delivered. Owning thread only.
    func deferredPostDelivered() {
        deferredDelivered.store(deferredDelivered.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    /// The marker of the pass under way, or `nil` between passes: read sequentially consistent when
    /// `first` (the read that pairs with a cancelled flag's store), acquiring otherwise (a wait's polls).
    ///
    /// ``ObservationToken/cancel()`` pairs with ``beginPass()`` as in Dekker's algorithm: the thread
    /// exchanges its marker in, then reads an observation's cancelled flag; `cancel()` sets the flag, then
    /// reads this. So either the pass skips the cancelled observer, or `cancel()` sees the pass and waits for
    /// the word to change (every pass has a marker of its own, so a later pass never looks like this one).
    func passMarker(first: Bool) -> UInt? {
        let value = first ? word.load(ordering: .sequentiallyConsistent) : word.load(ordering: .acquiring)
        return value & 1 == 1 ? value : nil
    }

    /// Begins a pass: marks it and takes the snapshot out, transferring its +1 reference to the caller.
    /// Owning thread only.
    @usableFromInline
    func beginPass() -> Unmanaged<Snapshot>? {
        passes &+= 1
        let raw = word.exchange(passes << 1 | 1, ordering: .sequentiallyConsistent)
        // The old word is the snapshot or 0: only this thread writes markers, and it ended its last pass.
        guard raw & 1 == 0, let pointer = UnsafeRawPointer(bitPattern: raw) else { return nil }
        return Unmanaged<Snapshot>.fromOpaque(pointer)
    }

    /// Ends the pass and puts `snapshot` in, transferring its +1 reference to the slot. Owning thread only.
    @usableFromInline
    func endPass(putting snapshot: Unmanaged<Snapshot>) {
        // The old word is this pass's marker: the hub leaves a slot alone while a pass is under way.
        _ = word.exchange(UInt(bitPattern: snapshot.toOpaque()), ordering: .sequentiallyConsistent)
    }

    deinit {
        take()?.release()
    }

    /// Takes the snapshot out, transferring its +1 reference to the caller; `nil` if the slot is empty or a
    /// pass is under way (the snapshot is with the owning thread then). Any thread.
    @usableFromInline
    func take() -> Unmanaged<Snapshot>? {
        var current = word.load(ordering: .sequentiallyConsistent)
        while current != 0, current & 1 == 0 {
            let (exchanged, original) = word.compareExchange(
                expected: current, desired: 0, ordering: .sequentiallyConsistent)
            if exchanged, let pointer = UnsafeRawPointer(bitPattern: current) {
                return Unmanaged<Snapshot>.fromOpaque(pointer)
            }
            current = original
        }
        return nil
    }
}
