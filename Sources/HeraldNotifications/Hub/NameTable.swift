import Synchronization

/// Gives every `(raw value, payload type)` pair a small integer, so hubs index observers by array
/// position instead of hashing strings on every post.
final class NameTable: Sendable {
    static let shared = NameTable()

    private struct Key: Hashable {
        let rawValue: String
        let payload: ObjectIdentifier
    }

    private let indices = Locked<[Key: Int]>([:])

    func index(of rawValue: String, payload: Any.Type) -> Int {
        let key = Key(rawValue: rawValue, payload: ObjectIdentifier(payload))
        return indices.withLock { indices in
            if let index = indices[key] { return index }
            let index = indices.count
            indices[key] = index
            return index
        }
    }
}
