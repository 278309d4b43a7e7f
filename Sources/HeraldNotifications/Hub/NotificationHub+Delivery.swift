import Synchronization

extension NotificationHub {
    /// Hands `notification` to every matching observer in `snapshot`, in registration order, with no
    /// lock held.
    ///
    /// Safety: `snapshot` is alive for this whole call and its `entries` retain every observation its
    /// tables' pointers designate; borrowing them skips a retain and a release per observer.
    @inlinable
    func deliver<UserInfo: Sendable>(_ notification: TypedNotification<UserInfo>, from snapshot: Snapshot) {
        let nameIndex = notification.name.index
        guard nameIndex < snapshot.anySenderRanges.count else { return }
        let anySender = snapshot.anySenderRanges[nameIndex]
        let anySenderTable = snapshot.anySenderTable
        // The sender's identity only: binding the sender itself would retain it for the whole walk.
        guard let senderID = notification.object.map({ ObjectIdentifier($0) }),
            let bySender = snapshot.senderIndex.observers(of: senderID, nameIndex: nameIndex)
        else {
            for index in anySender {
                Self.deliver(notification, to: anySenderTable[index])
            }
            return
        }
        // Both ranges are in registration order; merge them so that order holds across the two.
        let bySenderTable = snapshot.senderIndex.observers
        var a = anySender.lowerBound
        var s = bySender.lowerBound
        while a < anySender.upperBound || s < bySender.upperBound {
            if s == bySender.upperBound
                || (a < anySender.upperBound
                    && Self.sequenceNumber(of: anySenderTable[a], UserInfo.self)
                        < Self.sequenceNumber(of: bySenderTable[s], UserInfo.self))
            {
                Self.deliver(notification, to: anySenderTable[a])
                a += 1
            } else {
                Self.deliver(notification, to: bySenderTable[s])
                s += 1
            }
        }
    }

    /// Delivers to the observation at `pointer` (an unretained ``Observation`` of the notification's type).
    @inlinable @inline(__always)
    static func deliver<UserInfo: Sendable>(_ notification: TypedNotification<UserInfo>, to pointer: UInt) {
        Unmanaged<Observation<UserInfo>>.fromOpaque(UnsafeRawPointer(bitPattern: pointer)!)
            ._withUnsafeGuaranteedRef { $0.deliver(notification) }
    }

    /// The registration order of the observation at `pointer` (an unretained ``Observation`` of `UserInfo`).
    @inlinable @inline(__always)
    static func sequenceNumber<UserInfo: Sendable>(of pointer: UInt, _: UserInfo.Type) -> UInt64 {
        Unmanaged<Observation<UserInfo>>.fromOpaque(UnsafeRawPointer(bitPattern: pointer)!)
            ._withUnsafeGuaranteedRef { $0.sequenceNumber }
    }

    /// The current snapshot, built if a change invalidated the previous one.
    func currentSnapshot() -> Snapshot {
        registry.withLock { registry in
            registry.currentSnapshot(version: version.load(ordering: .relaxed))
        }
    }

    /// Registers a posting thread's cache of this hub, to be emptied on every change.
    func register(_ slot: SnapshotSlot) {
        registry.withLock { $0.register(slot) }
    }

    func remove(_ observation: any AnyObservation) {
        let garbage = registry.withLock { registry in
            let (nameIsUnobserved, garbage) = registry.remove(observation)
            // Already pruned: nothing changed, so posting threads keep their snapshots.
            if garbage.observations.isEmpty { return (garbage, [Unmanaged<Snapshot>]()) }
            let cached = registryDidChange(
                registry, nameIndex: observation.nameIndex, isObserved: nameIsUnobserved ? false : nil)
            return (garbage, cached)
        }
        for snapshot in garbage.1 { snapshot.release() }
    }

    /// Publishes a registry change to posters. Called with the lock held, after the change.
    ///
    /// - Parameter isObserved: The name's new observed state, or `nil` if it did not change.
    /// - Returns: The snapshots taken out of posting threads' caches, to release after unlocking.
    func registryDidChange(_ registry: borrowing Registry, nameIndex: Int, isObserved: Bool?) -> [Unmanaged<Snapshot>] {
        if let isObserved { observedNames.set(nameIndex, isObserved: isObserved) }
        // A thread that sees the new version also sees the change, and drops the snapshot it cached.
        version.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return registry.takeCachedSnapshots()
    }
}
