/// A JSON document as a Swift value: what ``JSONResponseSerializer`` produces.
///
/// Numbers are `Double`, as in JavaScript; integers beyond 2^53 lose precision (decode such APIs with
/// ``DecodableResponseSerializer`` into `Int64` or a `String`). Object key order is not kept.
///
/// Build values with literals and read them with subscripts that never trap:
///
/// ```swift
/// let value: JSONValue = ["name": "Ada", "tags": ["a", "b"], "age": 36, "admin": nil]
/// value["tags"]?[1]?.stringValue   // "b"
/// value["missing"]                 // nil
/// ```
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])
}

extension JSONValue {
    /// The member named `key` when this is an object that has one; `nil` otherwise.
    ///
    /// - Parameter key: The member name.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The element at `index` when this is an array and `index` is in bounds; `nil` otherwise.
    ///
    /// - Parameter index: A zero-based position.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// The Boolean when this is `true` or `false`; `nil` otherwise (numbers are not converted).
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The number when this is a number; `nil` otherwise.
    public var doubleValue: Double? {
        guard case .number(let value) = self else { return nil }
        return value
    }

    /// The number when this is a number with no fractional part within ±(2^53 − 1), the integers a `Double`
    /// holds exactly; `nil` otherwise (a larger one may have been rounded when it was parsed).
    public var intValue: Int? {
        guard case .number(let value) = self, abs(value) <= 9_007_199_254_740_991 else { return nil }
        return Int(exactly: value)
    }

    /// The string when this is a string; `nil` otherwise (numbers are not converted).
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The elements when this is an array; `nil` otherwise.
    public var arrayValue: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    /// The members when this is an object; `nil` otherwise.
    public var objectValue: [String: JSONValue]? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    /// This value with every object member whose value is `null` removed, recursively (also inside arrays).
    ///
    /// `null` elements of arrays are kept: removing them would shift indices. AFNetworking's
    /// `removesKeysWithNullValues` behaves the same way.
    public func removingKeysWithNullValues() -> JSONValue {
        switch self {
        case .object(let members):
            .object(members.filter { !$0.value.isNull }.mapValues { $0.removingKeysWithNullValues() })
        case .array(let elements):
            .array(elements.map { $0.removingKeysWithNullValues() })
        case .null, .bool, .number, .string:
            self
        }
    }
}
