extension NotificationHub {
    /// Hands `notification` to every matching observer, in registration order, with no lock held.
    @inlinable
    func deliver<UserInfo: Sendable>(_ notification: TypedNotification<UserInfo>) {
        let nameIndex = notification.name.index
        let senderID = notification.object.map { ObjectIdentifier($0) }
        let (anySender, sender) = observers(nameIndex: nameIndex, senderID: senderID)

        if sender.isEmpty {
            for observation in anySender {
                unsafeDowncast(observation, to: Observation<UserInfo>.self).deliver(notification)
            }
            return
        }
        // Both lists are in registration order; merge them so that order holds across the two.
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
                guard observation.sender === notification.object else {
                    foundGoneSender = true
                    continue
                }
                observation.deliver(notification)
            }
        }
        if foundGoneSender, let senderID {
            removeGoneSenders(nameIndex: nameIndex, senderID: senderID)
        }
    }

    @usableFromInline
    func observers(nameIndex: Int, senderID: ObjectIdentifier?) -> (anySender: Registry.List, sender: Registry.List) {
        registry.withLock { $0.lists(nameIndex: nameIndex, senderID: senderID) }
    }

    @usableFromInline
    func removeGoneSenders(nameIndex: Int, senderID: ObjectIdentifier) {
        let removed = registry.withLock { registry in
            let (removed, nameIsUnobserved) = registry.removeGoneSenders(nameIndex: nameIndex, senderID: senderID)
            if nameIsUnobserved { observedNames.set(nameIndex, isObserved: false) }
            return removed
        }
        _ = consume removed  // Released here, outside the lock: handler captures may run deinits.
    }

    func remove(_ observation: any AnyObservation) {
        let removed = registry.withLock { registry in
            let (removed, nameIsUnobserved) = registry.remove(observation)
            if nameIsUnobserved { observedNames.set(observation.nameIndex, isObserved: false) }
            return removed
        }
        _ = consume removed
    }
}
