import Glibc

/// The last value of each common response field (``CommonText``) that the transfers on one loop thread
/// received, handed out again for the next response that sends the same bytes.
///
/// A server's responses repeat most of their field values: `Server`, `Content-Type`, `Date` within the same
/// second, a resource's `ETag` and `Last-Modified`. A value longer than 15 bytes is a heap allocation on the
/// loop thread, freed later by whichever thread lets the response go; comparing the bytes with the last
/// value's, kept beside it, costs a fraction of that. Values of up to ``longestKept`` bytes are kept, and
/// never those that may carry credentials (``CommonText/keepsRecentValue``). Loop thread only.
package final class RecentFieldValues {
    // The stored properties are `@exclusivity(unchecked)`: used on the loop thread only (see `Transfer`).

    /// The longest value kept, in bytes.
    static let longestKept = 64

    @exclusivity(unchecked) private var values = ContiguousArray<String?>(
        repeating: nil, count: CommonText.allCases.count)
    /// Each kept value's bytes, `longestKept` bytes a field, and their counts.
    private let bytes: UnsafeMutableRawPointer
    private let counts: UnsafeMutablePointer<Int>

    init() {
        let fields = CommonText.allCases.count
        bytes = .allocate(byteCount: fields * Self.longestKept, alignment: 8)
        counts = .allocate(capacity: fields)
        counts.initialize(repeating: -1, count: fields)
    }

    deinit {
        bytes.deallocate()
        counts.deallocate()
    }

    /// The value of field `name` in the bytes `start..<end` of `raw`: the last one kept for `name` when it
    /// has exactly these bytes, otherwise a new string, kept for the next response when `name` allows it.
    func value(of name: CommonText, _ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        let count = end - start
        guard name.keepsRecentValue, count <= Self.longestKept, let base = raw.baseAddress else {
            return ResponseHeadLine.text(raw, start, end)
        }
        let index = name.rawValue
        let kept = bytes + index * Self.longestKept
        if counts[index] == count, memcmp(kept, base + start, count) == 0, let last = values[index] {
            return last
        }
        let made = ResponseHeadLine.text(raw, start, end)
        kept.copyMemory(from: base + start, byteCount: count)
        counts[index] = count
        values[index] = made
        return made
    }
}
