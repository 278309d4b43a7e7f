/// A snapshot's observers that filter by sender, laid out for a post to find them without hashing through
/// `Hasher`, and to walk them without retaining or releasing anything.
///
/// One open-addressing table (linear probing, Fibonacci hashing of the sender's address and the name's
/// index) maps each observed (name, sender) pair to a range of ``observers``: unretained pointers to the
/// pair's observations, in registration order. The snapshot's `entries` own those observations for as long
/// as the snapshot lives. Built with the snapshot, in time linear in the number of filtered observations;
/// never changed after.
///
/// Matching by address alone is exact because an observation pins its sender's memory (see
/// ``Observation``): no other object can be at a live observation's sender address.
@usableFromInline
struct SenderIndex {
    @usableFromInline
    struct Slot {
        /// The sender's `ObjectIdentifier` bits; 0 marks an empty slot (no object lives at address 0).
        @usableFromInline var sender: UInt
        @usableFromInline var nameIndex: Int
        @usableFromInline var range: Range<Int>
    }

    /// A power of two in size, at most half full; empty when no observation filters by sender.
    @usableFromInline let slots: UnsafeMutableBufferPointer<Slot>
    /// `64 - log2(slots.count)`: a slot index is the top bits of the mixed key.
    @usableFromInline let shift: UInt
    /// Every filtered observation as an unretained object pointer, grouped by (name, sender).
    @usableFromInline let observers: UnsafeMutableBufferPointer<UInt>

    init(entries: ContiguousArray<Registry.Entry>) {
        var pairs = 0
        var total = 0
        for entry in entries {
            pairs += entry.bySender.count
            for list in entry.bySender.values { total += list.count }
        }
        observers = .allocate(capacity: total)
        guard pairs > 0 else {
            slots = .allocate(capacity: 0)
            shift = 64
            return
        }
        var capacity = 2
        var bits: UInt = 1
        while capacity < pairs * 2 {
            capacity *= 2
            bits += 1
        }
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(sender: 0, nameIndex: 0, range: 0..<0))
        shift = 64 - bits
        var next = 0
        for (nameIndex, entry) in entries.enumerated() {
            for (senderID, list) in entry.bySender {
                let start = next
                for observation in list {
                    observers[next] = UInt(bitPattern: Unmanaged<AnyObject>.passUnretained(observation).toOpaque())
                    next += 1
                }
                let sender = UInt(bitPattern: senderID)
                var index = Self.home(sender: sender, nameIndex: nameIndex, shift: shift)
                while slots[index].sender != 0 { index = (index + 1) & (capacity - 1) }
                slots[index] = Slot(sender: sender, nameIndex: nameIndex, range: start..<next)
            }
        }
    }

    /// The first slot to probe for a pair.
    @inlinable @inline(__always)
    static func home(sender: UInt, nameIndex: Int, shift: UInt) -> Int {
        let mixed = (sender ^ UInt(bitPattern: nameIndex)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> shift)
    }

    /// Where the observers of `sender` for the name at `nameIndex` are in ``observers``, or `nil` when none
    /// filter by that sender. One load and a compare when nothing filters by sender at all.
    @inlinable @inline(__always)
    func observers(of sender: ObjectIdentifier, nameIndex: Int) -> Range<Int>? {
        guard !slots.isEmpty else { return nil }
        let key = UInt(bitPattern: sender)
        var index = Self.home(sender: key, nameIndex: nameIndex, shift: shift)
        while true {
            let slot = slots[index]
            if slot.sender == 0 { return nil }
            if slot.sender == key && slot.nameIndex == nameIndex { return slot.range }
            index = (index + 1) & (slots.count - 1)
        }
    }

    func deallocate() {
        slots.deallocate()
        observers.deallocate()
    }
}
