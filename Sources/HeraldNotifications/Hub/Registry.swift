/// The observers of one hub, indexed by name, then by sender.
///
/// Lives inside the hub's mutex and is only changed there. Posts never take that mutex: they read an
/// immutable ``Snapshot`` of the registry (see `PostingThread.snapshot(of:)`), built lazily on the first
/// post after a change, so a burst of registrations copies nothing.
@usableFromInline
struct Registry: Sendable {
    @usableFromInline typealias List = ContiguousArray<any AnyObservation>

    @usableFromInline
    struct Entry: Sendable {
        /// Observers of every sender (registered with `object: nil`), in registration order.
        @usableFromInline var anySender: List = []
        /// Observers of one sender, keyed by its identity, each list in registration order.
        @usableFromInline var bySender: [ObjectIdentifier: List] = [:]
        var count = 0

        init() {}
    }

    private(set) var entries: ContiguousArray<Entry> = []
    private var nextSequenceNumber: UInt64 = 0
    /// The snapshot of the current `entries`, once a post asked for it; `nil` after any change.
    private var snapshot: Snapshot?
    /// The posting threads' caches of this hub's snapshot, emptied on every change.
    private var slots: [SnapshotSlot] = []
    private var slotsPruneThreshold = 16

    mutating func register(_ slot: SnapshotSlot) {
        if slots.count >= slotsPruneThreshold {
            slots.removeAll { $0.isAbandoned && !$0.hasUndeliveredDeferredPosts }
            slotsPruneThreshold = max(16, slots.count * 2)
        }
        slots.append(slot)
    }

    /// Empties every posting thread's cached snapshot; called after each change, with the version
    /// already bumped. The taken snapshots are returned for release after unlocking.
    func takeCachedSnapshots() -> [Unmanaged<Snapshot>] {
        slots.compactMap { $0.take() }
    }

    /// The posting threads' slots: a cancel or a drain checks what each thread is delivering.
    var postingSlots: [SnapshotSlot] { slots }

    /// Every registered `.queue` observation.
    var queuedObservations: [any AnyObservation] {
        var found: [any AnyObservation] = []
        for entry in entries {
            found.append(contentsOf: entry.anySender.lazy.filter(\.isQueued))
            for list in entry.bySender.values { found.append(contentsOf: list.lazy.filter(\.isQueued)) }
        }
        return found
    }

    mutating func makeSequenceNumber() -> UInt64 {
        defer { nextSequenceNumber += 1 }
        return nextSequenceNumber
    }

    /// The snapshot posts read, built if a change invalidated the previous one.
    mutating func currentSnapshot(version: UInt64) -> Snapshot {
        // A change that found nothing to remove still bumps the version: rebuild so that the snapshot's
        // version is the current one, or posting threads would refresh on every post.
        if let snapshot, snapshot.version == version { return snapshot }
        let snapshot = Snapshot(entries: entries, version: version)
        self.snapshot = snapshot
        return snapshot
    }

    func hasObservers(nameIndex: Int) -> Bool {
        nameIndex < entries.count && entries[nameIndex].count > 0
    }

    /// Adds an observation.
    ///
    /// - Returns: Whether its name went from unobserved to observed, and the invalidated snapshot for
    ///   the caller to release after unlocking.
    mutating func insert(_ observation: any AnyObservation) -> (nameIsNewlyObserved: Bool, garbage: Snapshot?) {
        let garbage = snapshot.take()
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
        return (entries[index].count == 1, garbage)
    }

    /// Removes an observation if present.
    ///
    /// - Returns: What the caller must release after unlocking (the observation, whose handler's captures
    ///   may run arbitrary deinits, and the invalidated snapshot), and whether its name is now unobserved.
    mutating func remove(_ observation: any AnyObservation) -> (nameIsUnobserved: Bool, garbage: Garbage) {
        let index = observation.nameIndex
        guard index < entries.count else { return (false, Garbage()) }
        var garbage = Garbage()
        if let senderID = observation.senderID {
            guard let position = entries[index].bySender[senderID]?.firstIndex(where: { $0 === observation }) else {
                return (false, garbage)
            }
            garbage.observations.append(entries[index].bySender[senderID]!.remove(at: position))
            if entries[index].bySender[senderID]!.isEmpty {
                entries[index].bySender[senderID] = nil
            }
        } else {
            guard let position = entries[index].anySender.firstIndex(where: { $0 === observation }) else {
                return (false, garbage)
            }
            garbage.observations.append(entries[index].anySender.remove(at: position))
        }
        garbage.snapshot = snapshot.take()
        entries[index].count -= 1
        return (entries[index].count == 0, garbage)
    }

    /// References a change dropped from the registry. Released by the caller after unlocking: the last
    /// reference to an observation releases its handler, whose captures may run any code.
    struct Garbage: Sendable {
        var observations: List = []
        var snapshot: Snapshot?
    }
}

/// An immutable copy of a registry's entries, which posts iterate without any lock.
@usableFromInline
final class Snapshot: Sendable {
    @usableFromInline let entries: ContiguousArray<Registry.Entry>
    /// The hub's version when the snapshot was current.
    @usableFromInline let version: UInt64
    /// Where each name's observers of any sender are in ``anySenderTable``, by name index.
    @usableFromInline let anySenderRanges: ContiguousArray<Range<Int>>
    /// Every name's observers of any sender (`Entry.anySender`) as unretained object pointers, in
    /// registration order, name after name. `entries` retains them for as long as this snapshot lives, so a
    /// post walks this memory without retaining or releasing anything: not an observer, and not the list
    /// (reading a list out of `entries` costs a retain and a release of its buffer).
    @usableFromInline nonisolated(unsafe) let anySenderTable: UnsafeMutableBufferPointer<UInt>
    /// Every name's observers of one sender, found by (name, sender) and walked the same way.
    @usableFromInline nonisolated(unsafe) let senderIndex: SenderIndex

    init(entries: ContiguousArray<Registry.Entry>, version: UInt64) {
        self.entries = entries
        self.version = version
        self.senderIndex = SenderIndex(entries: entries)
        let table = UnsafeMutableBufferPointer<UInt>.allocate(capacity: entries.reduce(0) { $0 + $1.anySender.count })
        var ranges = ContiguousArray<Range<Int>>()
        ranges.reserveCapacity(entries.count)
        var next = 0
        for entry in entries {
            let start = next
            for observation in entry.anySender {
                table[next] = UInt(bitPattern: Unmanaged<AnyObject>.passUnretained(observation).toOpaque())
                next += 1
            }
            ranges.append(start..<next)
        }
        anySenderRanges = ranges
        anySenderTable = table
    }

    deinit {
        anySenderTable.deallocate()
        senderIndex.deallocate()
    }
}
