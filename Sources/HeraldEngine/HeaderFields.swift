#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An ordered list of header fields with case-insensitive lookup by name: a request's fields as they go out,
/// a response's as they came in. `Herald`'s public `HeaderFields` is made from it and turned into it.
package struct HeaderFields: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// One field: a name as written and its value.
    package struct Field: Sendable, Hashable {
        /// The name as written (lookups ignore case).
        package var name: String
        /// The value, without surrounding whitespace.
        package var value: String

        /// Creates a field.
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    package private(set) var fields: [Field]

    /// Creates a list of `fields`, in their order.
    package init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// An empty list with room for `capacity` fields, for a response head being received.
    package init(capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    /// A list of the literal's fields, in its order.
    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { Field(name: $0.0, value: $0.1) })
    }

    /// Makes room for `capacity` fields in all, so adding up to that many allocates once at most.
    package mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    package var startIndex: Int { fields.startIndex }
    package var endIndex: Int { fields.endIndex }
    package subscript(position: Int) -> Field { fields[position] }

    /// The value of the first field named `name` (case-insensitive), or `nil`.
    package subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the fields named `name` (case-insensitive), in order.
    package func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Whether a field named `name` (case-insensitive) is present.
    package func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Appends a field, keeping any existing field of the same name.
    package mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` (case-insensitive) with one field, appended at the end.
    package mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field named `name` (case-insensitive).
    package mutating func remove(name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// Appends `more` to the last field's value, for a folded (obsolete continuation) line.
    package mutating func continueLastValue(with more: String) {
        guard !fields.isEmpty else { return }
        fields[fields.count - 1].value += " " + more
    }
}

extension String {
    /// Whether the two have the same UTF-8 bytes. `==` compares canonical equivalence: `"e\u{301}" == "\u{e9}"`,
    /// though what goes on the wire differs.
    package func hasSameBytes(as other: String) -> Bool {
        var mine = self
        var theirs = other
        return mine.withUTF8 { left in
            theirs.withUTF8 { right in
                guard left.count == right.count else { return false }
                guard let first = left.baseAddress, let second = right.baseAddress else { return true }
                return memcmp(first, second, left.count) == 0
            }
        }
    }

    /// ASCII case-insensitive equality, as HTTP field names compare; other bytes must match exactly.
    /// Allocation-free: header lookups run on every transfer, so native strings are compared as the two
    /// byte buffers they are.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let contiguous = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                Self.asciiCaseInsensitiveEquals(mine, theirs)
            }
        }
        if let contiguous, let result = contiguous { return result }
        return Self.asciiCaseInsensitiveEquals(utf8, other.utf8)
    }

    private static func asciiCaseInsensitiveEquals<Bytes: Collection<UInt8>>(_ a: Bytes, _ b: Bytes) -> Bool {
        var index = b.startIndex
        for byte in a {
            let theirs = b[index]
            b.formIndex(after: &index)
            guard byte != theirs else { continue }
            let lower = byte | 0x20
            guard lower == theirs | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
        }
        return true
    }
}
