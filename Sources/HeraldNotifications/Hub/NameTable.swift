import Synchronization

/// Gives every `(raw value, payload type)` pair a small integer, so hubs index observers by array
/// position instead of hashing strings on every post.
final class NameTable: Sendable {
    static let shared = NameTable()

    private struct Key: Hashable {
        let rawValue: String
        let payload: ObjectIdentifier
    }

    /// Every entry ever made: the table keeps them for the life of the process, so names may refer to
    /// them without retaining them.
    private let entries = Locked<[Key: Entry]>([:])

    /// One `(raw value, payload type)` pair's index and raw value, never freed.
    final class Entry: Sendable {
        let rawValue: String
        let index: Int

        init(rawValue: String, index: Int) {
            self.rawValue = rawValue
            self.index = index
        }
    }

    /// The entry of `(rawValue, payload)`, made on first use.
    func entry(of rawValue: String, payload: Any.Type) -> Entry {
        let key = Key(rawValue: rawValue, payload: ObjectIdentifier(payload))
        return entries.withLock { entries in
            if let entry = entries[key] { return entry }
            let entry = Entry(rawValue: rawValue, index: entries.count)
            entries[key] = entry
            return entry
        }
    }
}
