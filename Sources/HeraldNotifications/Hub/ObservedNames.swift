import Synchronization

/// A lock-free set of the name indices that have at least one observer in a hub.
///
/// Lets a post to a name nobody observes return after one atomic load: no lock, no allocation, no
/// payload construction. Exact for the first `capacity` names created in the process; later names are
/// always reported as possibly observed, and the hub then asks its registry under the lock.
@usableFromInline
struct ObservedNames: ~Copyable, Sendable {
    @inlinable static var capacity: Int { 64 * 64 }

    @usableFromInline let words: InlineArray<64, Atomic<UInt64>>

    init() {
        words = InlineArray { _ in Atomic<UInt64>(0) }
    }

    /// Whether `index` may have observers; `false` is exact.
    @inlinable @inline(__always)
    func mayContain(_ index: Int) -> Bool {
        guard index < Self.capacity else { return true }
        return words[index &>> 6].load(ordering: .acquiring) & (1 &<< UInt64(index & 63)) != 0
    }

    /// Marks `index` observed or unobserved. Called with the registry's lock held, so updates to one
    /// word never race with each other's intent.
    func set(_ index: Int, isObserved: Bool) {
        guard index < Self.capacity else { return }
        let bit: UInt64 = 1 &<< UInt64(index & 63)
        if isObserved {
            words[index &>> 6].bitwiseOr(bit, ordering: .releasing)
        } else {
            words[index &>> 6].bitwiseAnd(~bit, ordering: .releasing)
        }
    }
}
