import Synchronization

extension NotificationHub {
    /// Hands `notification` to every matching observer in `snapshot`, in registration order, with no
    /// lock held.
    @inlinable
    func deliver<UserInfo: Sendable>(_ notification: TypedNotification<UserInfo>, from snapshot: Snapshot) {
        let nameIndex = notification.name.index
        guard nameIndex < snapshot.entries.count else { return }
        guard let object = notification.object, !snapshot.entries[nameIndex].bySender.isEmpty,
            let sender = snapshot.entries[nameIndex].bySender[ObjectIdentifier(object)]
        else {
            // Safety: `snapshot` is alive for this whole call and its `entries` retain every observation
            // the table's pointers designate; borrowing them skips a retain/release pair per observer.
            let table = snapshot.anySenderTable
            for index in snapshot.anySenderRanges[nameIndex] {
                Unmanaged<Observation<UserInfo>>.fromOpaque(UnsafeRawPointer(bitPattern: table[index])!)
                    ._withUnsafeGuaranteedRef {
                        $0.deliver(notification)
                    }
            }
            return
        }
        // Both lists are in registration order; merge them so that order holds across the two. (Read only
        // here: a copy of the list costs a retain and a release, which the plain path above does without.)
        let anySender = snapshot.entries[nameIndex].anySender
        var foundGoneSender = false
        var a = anySender.startIndex
        var s = sender.startIndex
        while a < anySender.endIndex || s < sender.endIndex {
            if s == sender.endIndex
                || (a < anySender.endIndex && anySender[a].sequenceNumber < sender[s].sequenceNumber)
            {
                unsafeDowncast(anySender[a], to: Observation<UserInfo>.self).deliver(notification)
                a += 1
            } else {
                let observation = unsafeDowncast(sender[s], to: Observation<UserInfo>.self)
                s += 1
                // Same ObjectIdentifier but not the same object: the observed sender died and this one
                // reuses its address.
                guard observation.sender === object else {
                    foundGoneSender = true
                    continue
                }
                observation.deliver(notification)
            }
        }
        if foundGoneSender {
            removeGoneSenders(nameIndex: nameIndex, senderID: ObjectIdentifier(object))
        }
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

    @usableFromInline
    func removeGoneSenders(nameIndex: Int, senderID: ObjectIdentifier) {
        let garbage = registry.withLock { registry in
            let (nameIsUnobserved, garbage) = registry.removeGoneSenders(nameIndex: nameIndex, senderID: senderID)
            // Another thread may have pruned them first: then nothing changed.
            if garbage.observations.isEmpty { return (garbage, [Unmanaged<Snapshot>]()) }
            let cached = registryDidChange(registry, nameIndex: nameIndex, isObserved: nameIsUnobserved ? false : nil)
            return (garbage, cached)
        }
        // Released here, outside the lock: handler captures may run deinits.
        for snapshot in garbage.1 { snapshot.release() }
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
