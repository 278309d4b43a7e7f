/// The observers of one hub, indexed by name, then by sender.
///
/// Lives inside the hub's mutex. Lists are copy-on-write arrays: a post copies the (at most two) lists
/// it needs under the lock — two retains — and iterates them after releasing it, so handlers never run
/// under the lock and a registration change never disturbs a delivery in progress.
@usableFromInline
struct Registry {
    @usableFromInline typealias List = ContiguousArray<any AnyObservation>

    struct Entry {
        /// Observers of every sender (registered with `object: nil`), in registration order.
        var anySender: List = []
        /// Observers of one sender, keyed by its identity, each list in registration order.
        var bySender: [ObjectIdentifier: List] = [:]
        var count = 0
    }

    private(set) var entries: ContiguousArray<Entry> = []
    private var nextSequenceNumber: UInt64 = 0

    mutating func makeSequenceNumber() -> UInt64 {
        defer { nextSequenceNumber += 1 }
        return nextSequenceNumber
    }

    /// The lists a post of `nameIndex` by `senderID` must visit.
    func lists(nameIndex: Int, senderID: ObjectIdentifier?) -> (anySender: List, sender: List) {
        guard nameIndex < entries.count else { return ([], []) }
        let anySender = entries[nameIndex].anySender
        guard let senderID, !entries[nameIndex].bySender.isEmpty else { return (anySender, []) }
        return (anySender, entries[nameIndex].bySender[senderID] ?? [])
    }

    func hasObservers(nameIndex: Int) -> Bool {
        nameIndex < entries.count && entries[nameIndex].count > 0
    }

    /// Adds an observation; returns whether its name went from unobserved to observed.
    mutating func insert(_ observation: any AnyObservation) -> Bool {
        let index = observation.nameIndex
        if index >= entries.count {
            entries.append(contentsOf: repeatElement(Entry(), count: index - entries.count + 1))
        }
        if let senderID = observation.senderID {
            entries[index].bySender[senderID, default: []].append(observation)
        } else {
            entries[index].anySender.append(observation)
        }
        entries[index].count += 1
        return entries[index].count == 1
    }

    /// Removes an observation if present.
    ///
    /// - Returns: The removed observation, for the caller to release after unlocking (its handler's
    ///   captures may run arbitrary deinits), and whether its name is now unobserved.
    mutating func remove(_ observation: any AnyObservation) -> (removed: (any AnyObservation)?, nameIsUnobserved: Bool) {
        let index = observation.nameIndex
        guard index < entries.count else { return (nil, false) }
        var removed: (any AnyObservation)?
        if let senderID = observation.senderID {
            guard let position = entries[index].bySender[senderID]?.firstIndex(where: { $0 === observation }) else {
                return (nil, false)
            }
            removed = entries[index].bySender[senderID]!.remove(at: position)
            if entries[index].bySender[senderID]!.isEmpty {
                entries[index].bySender[senderID] = nil
            }
        } else {
            guard let position = entries[index].anySender.firstIndex(where: { $0 === observation }) else {
                return (nil, false)
            }
            removed = entries[index].anySender.remove(at: position)
        }
        entries[index].count -= 1
        return (removed, entries[index].count == 0)
    }

    /// Removes the observations of `senderID` whose sender is gone.
    ///
    /// - Returns: The removed observations, to release after unlocking, and whether the name is now
    ///   unobserved.
    mutating func removeGoneSenders(nameIndex: Int, senderID: ObjectIdentifier) -> (removed: List, nameIsUnobserved: Bool) {
        guard nameIndex < entries.count, var list = entries[nameIndex].bySender.removeValue(forKey: senderID) else {
            return ([], false)
        }
        var removed: List = []
        list.removeAll { observation in
            guard observation.isSenderGone else { return false }
            removed.append(observation)
            return true
        }
        if !list.isEmpty {
            entries[nameIndex].bySender[senderID] = list
        }
        entries[nameIndex].count -= removed.count
        return (removed, !removed.isEmpty && entries[nameIndex].count == 0)
    }
}
