import Foundation
import HeraldNotifications
import Synchronization

/// A ``ResponseCache`` in memory, bounded by the total size of its entries: when a store would go past
/// ``capacity``, the least recently used entries are evicted first, until a sixteenth of the capacity is free
/// beside the new entry (so that the stores after it need evict nothing for a while). Safe from any thread.
///
/// An entry's size is its body plus its header fields. An entry larger than the whole capacity is not
/// stored (and any earlier entry for the same request is removed, so a stale one is never kept in its
/// place).
public final class InMemoryResponseCache: ResponseCache {
    private struct Entry {
        var response: CachedResponse
        var cost: Int
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var totalCost = 0
        var clock: UInt64 = 0
    }

    /// The most bytes the entries may take together.
    public let capacity: Int
    private let state = Locked(State())
    /// The number of entries, written under the lock after every change: a lookup or a removal in an empty
    /// cache (every response uncacheable, say) returns at once, without building the key or taking the lock.
    private let entryCount = Atomic<Int>(0)

    /// Creates an empty cache.
    /// - Parameter capacity: The most bytes (bodies plus header fields) kept; default 10 MiB.
    public init(capacity: Int = 10 << 20) {
        self.capacity = max(0, capacity)
    }

    /// The bytes the entries take now.
    public var currentSize: Int { state.withLock { $0.totalCost } }

    /// The number of entries.
    public var count: Int { state.withLock { $0.entries.count } }

    /// The entry stored for `request`, or `nil`; a hit makes it the most recently used.
    public func cachedResponse(for request: Request) -> CachedResponse? {
        guard entryCount.load(ordering: .acquiring) > 0 else { return nil }
        let key = Self.key(for: request)
        return state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.response
        }
    }

    /// Stores `cachedResponse` for `request`, evicting least recently used entries to make room.
    public func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request) {
        let key = Self.key(for: request)
        let cost = Self.cost(of: cachedResponse)
        state.withLock { state in
            defer { entryCount.store(state.entries.count, ordering: .releasing) }
            if let old = state.entries.removeValue(forKey: key) { state.totalCost -= old.cost }
            guard cost <= capacity else { return }
            if state.totalCost + cost > capacity {
                // One sort for all the victims: a search of every entry per victim would cost the square of the
                // entry count when a large response displaces many small ones, under the lock every lookup takes.
                // And down to a sixteenth below the capacity, not just enough for this entry: sorting on every store
                // of a full cache cost 44 ms a store at 11,000 entries (debug build).
                let goal = max(0, capacity - capacity / 16 - cost)
                let byUse = state.entries.map { (key: $0.key, lastUse: $0.value.lastUse, cost: $0.value.cost) }
                    .sorted { $0.lastUse < $1.lastUse }
                for victim in byUse {
                    guard state.totalCost > goal else { break }
                    state.entries[victim.key] = nil
                    state.totalCost -= victim.cost
                }
            }
            state.clock += 1
            state.entries[key] = Entry(response: cachedResponse, cost: cost, lastUse: state.clock)
            state.totalCost += cost
        }
    }

    /// Removes the entry for `request`, if any.
    public func removeCachedResponse(for request: Request) {
        guard entryCount.load(ordering: .acquiring) > 0 else { return }
        let key = Self.key(for: request)
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.totalCost -= old.cost }
            entryCount.store(state.entries.count, ordering: .releasing)
        }
    }

    /// Removes every entry.
    public func removeAllCachedResponses() {
        state.withLock { state in
            state.entries.removeAll()
            state.totalCost = 0
            entryCount.store(0, ordering: .releasing)
        }
    }

    private static func cost(of entry: CachedResponse) -> Int {
        entry.data.count + entry.response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }
}
