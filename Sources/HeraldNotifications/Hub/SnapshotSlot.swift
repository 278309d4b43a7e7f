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

    init(hubID: UInt64) {
        self.hubID = hubID
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
