import HeraldEngine

/// An ordered list of HTTP header fields with case-insensitive lookup by name.
///
/// Order and duplicates are kept exactly as sent or received: `Set-Cookie` may appear several times,
/// and a request goes out with its fields in the order they were added.
public struct HTTPHeaders: Sendable, Hashable {
    /// One header field: a name and its value.
    public struct Field: Sendable, Hashable {
        /// The field name as written (lookups ignore case).
        public var name: String
        /// The field value, without surrounding whitespace.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The list itself, as the engine holds it: a request's fields go to a transfer, and a response's come
    /// from one, without a copy.
    package private(set) var storage: HeaderFields

    /// The fields in order.
    public var fields: [Field] {
        storage.fields.map { Field(name: $0.name, value: $0.value) }
    }

    /// Headers over the engine's list of fields.
    package init(storage: HeaderFields) {
        self.storage = storage
    }

    /// Makes room for `capacity` fields in all, so adding up to that many allocates once at most.
    mutating func reserveCapacity(_ capacity: Int) {
        storage.reserveCapacity(capacity)
    }

    /// Creates headers from fields, keeping their order.
    public init(_ fields: [Field] = []) {
        storage = HeaderFields(fields.map { HeaderFields.Field(name: $0.name, value: $0.value) })
    }

    /// Creates headers from name–value pairs, keeping their order.
    public init(_ pairs: [(String, String)]) {
        storage = HeaderFields(pairs.map { HeaderFields.Field(name: $0.0, value: $0.1) })
    }

    /// The value of the first field with this name (case-insensitive), or `nil`.
    public subscript(name: String) -> String? {
        storage[name]
    }

    /// Every value of the fields with this name (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        storage.values(for: name)
    }

    /// Whether a field with this name (case-insensitive) is present.
    public func contains(_ name: String) -> Bool {
        storage.contains(name)
    }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func add(name: String, value: String) {
        storage.add(name: name, value: value)
    }

    /// Replaces every field of this name (case-insensitive) with one field, appended at the end.
    public mutating func replaceOrAdd(name: String, value: String) {
        storage.replaceOrAdd(name: name, value: value)
    }

    /// Removes every field of this name (case-insensitive).
    public mutating func remove(name: String) {
        storage.remove(name: name)
    }

    /// The number of fields.
    public var count: Int { storage.count }
}

extension HTTPHeaders: Sequence {
    /// Iterates the fields in order.
    public func makeIterator() -> Iterator {
        Iterator(base: storage.fields.makeIterator())
    }

    /// The fields in order, one at a time.
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[HeaderFields.Field]>

        /// The next field, or `nil` after the last.
        public mutating func next() -> Field? {
            base.next().map { Field(name: $0.name, value: $0.value) }
        }
    }

    /// The number of fields.
    public var underestimatedCount: Int { storage.count }
}

extension HTTPHeaders: CustomReflectable {
    /// The fields, as `print` and `dump` show them.
    public var customMirror: Mirror {
        Mirror(self, children: ["fields": fields], displayStyle: .struct)
    }
}

extension HTTPHeaders: ExpressibleByDictionaryLiteral {
    /// Creates headers from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }
}
