import Synchronization

/// One posting thread's cached registry snapshot of one hub, which the hub can take back.
///
/// Posts read the registry through this cache instead of the hub's lock, so posting from many threads
/// contends on nothing. The owning thread takes the snapshot out for the length of a delivery and puts it
/// back; the hub, when its registry changes, empties every slot registered with it. That way a thread that
/// stops posting does not keep removed observers (and what their handlers capture) alive.
///
/// The two sides race only in one way: the thread puts back a snapshot just as the hub changes. Both use
/// sequentially consistent operations — the thread stores, then reads the version; the hub bumps the
/// version, then empties the slot — so at least one of them sees the other and takes the stale snapshot
/// out; `exchange` makes sure only one of them releases it.
@usableFromInline
final class SnapshotSlot: Sendable {
    /// A retained `Unmanaged<Snapshot>` as a bit pattern, or 0.
    private let bits = Atomic<UInt>(0)

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

    /// Odd while the owning thread is delivering a post of this hub (a pass), even otherwise; bumped at
    /// the start and at the end of every pass. Only the owning thread writes it.
    ///
    /// ``ObservationToken/cancel()`` pairs with it as in Dekker's algorithm: the thread stores the odd
    /// value, then reads an observation's cancelled flag; `cancel()` sets the flag, then reads this. So
    /// either the pass skips the cancelled observer, or `cancel()` sees the pass and waits for its end.
    @usableFromInline let passEpoch = Atomic<UInt64>(0)
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

    /// Marks the start of a pass. Owning thread only.
    @usableFromInline @inline(__always)
    func beginPass() {
        let epoch = passEpoch.load(ordering: .relaxed)
        passEpoch.store(epoch &+ 1, ordering: .sequentiallyConsistent)
    }

    /// Marks the end of a pass. Owning thread only.
    @usableFromInline @inline(__always)
    func endPass() {
        let epoch = passEpoch.load(ordering: .relaxed)
        passEpoch.store(epoch &+ 1, ordering: .releasing)
    }

    /// Counts a post queued for later. Owning thread only.
    func deferredPostQueued() {
        deferredQueued.store(deferredQueued.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    /// Counts a queued post delivered. Owning thread only.
    func deferredPostDelivered() {
        deferredDelivered.store(deferredDelivered.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    deinit {
        take()?.release()
    }

    /// Takes the snapshot out, transferring its +1 reference to the caller.
    @usableFromInline
    func take() -> Unmanaged<Snapshot>? {
        let raw = bits.exchange(0, ordering: .sequentiallyConsistent)
        guard let pointer = UnsafeRawPointer(bitPattern: raw) else { return nil }
        return Unmanaged<Snapshot>.fromOpaque(pointer)
    }

    /// Puts a snapshot in, transferring its +1 reference to the slot.
    ///
    /// - Returns: What the slot held (normally nothing), for the caller to release.
    @usableFromInline
    func put(_ snapshot: Unmanaged<Snapshot>) -> Unmanaged<Snapshot>? {
        let raw = bits.exchange(UInt(bitPattern: snapshot.toOpaque()), ordering: .sequentiallyConsistent)
        guard let pointer = UnsafeRawPointer(bitPattern: raw) else { return nil }
        return Unmanaged<Snapshot>.fromOpaque(pointer)
    }
}
