import Foundation

/// AFNetworking's query-string encoding: how parameters become `a=1&b%5B%5D=2`, for URL queries and
/// `application/x-www-form-urlencoded` bodies alike.
///
/// - Keys of an object are sorted (by Unicode scalar values) and their values encoded in that order.
/// - A nested object `{"a": {"b": "c"}}` becomes `a[b]=c`; an array `{"a": [1, 2]}` becomes `a[]=1&a[]=2`,
///   with the brackets percent-escaped like every other reserved character (`a%5Bb%5D=c`), as AF does. An empty
///   array or object sends nothing at all (AF's rule too): a server can't tell `{"tags": []}` from no `tags`, so
///   send such a value with ``JSONRequestSerializer``. Nor does an array of arrays or objects survive: each
///   element is `a[]`, so `{"a": [[1, 2], [3]]}` and `{"a": [[1], [2], [3]]}` encode alike, and
///   `{"items": [{"id": 1}, {"tag": "x"}]}` becomes `items[][id]=1&items[][tag]=x`, which Rack and Rails read
///   as one object; a key with brackets of its own (`"a[b]"`) reads as a nested one. Send such values as JSON.
/// - Strings are percent-escaped with ``percentEscaped(_:)``; numbers are written without a fraction when
///   they are whole (`1`, not `1.0`); `true` and `false` are `1` and `0` (AF's `NSNumber` description);
///   `null` is the key alone, without `=`.
/// - A number that is not finite (NaN, infinity) has no text form: encoding throws
///   ``HeraldError/Code/invalidRequest``.
/// - A number is a `Double` (``JSONValue``): a whole number beyond 2^53 is written as the `Double` holds it,
///   which may not be the integer given (the literal `9007199254740993` is `9007199254740992` already). Pass a
///   64-bit identifier as a string (`"id": "9007199254740993"`).
public enum FormURLEncoding {
    /// The characters left as they are by ``percentEscaped(_:)``: RFC 3986's unreserved characters plus
    /// `/` and `?`, which a query may contain (AF's `AFCharacterSetURLQueryAllowed` without the general and
    /// sub-delimiters `:#[]@!$&'()*+,;=`).
    static func isUnescaped(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~/?".utf8.contains(byte)
        }
    }

    /// Percent-escapes `string` as AF's `AFPercentEscapedStringFromString` does: every UTF-8 byte that is
    /// not a letter, a digit or one of `-._~/?` becomes `%XX` (uppercase hex). A space is `%20`, never `+`.
    ///
    /// - Parameter string: Any text.
    /// - Returns: The escaped text, ASCII only.
    public static func percentEscaped(_ string: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if isUnescaped(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Encodes `parameters` as a query string (without a leading `?`), following the rules above.
    ///
    /// - Parameter parameters: The parameters; an empty object gives an empty string.
    /// - Returns: The `key=value` pairs joined with `&`.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` when a number is not finite.
    public static func query(from parameters: [String: JSONValue]) throws(HeraldError) -> String {
        try pairs(from: parameters).map { key, value in
            value.map { percentEscaped(key) + "=" + percentEscaped($0) } ?? percentEscaped(key)
        }.joined(separator: "&")
    }

    /// Encodes `parameters`, which must be an object (or `nil`), as ``query(from:)`` does.
    static func query(from parameters: JSONValue?) throws(HeraldError) -> String {
        try query(from: members(of: parameters))
    }

    /// The name–value pairs of `parameters` (an object or `nil`) before escaping, without the `null` ones:
    /// the fields of a multipart form.
    static func fields(from parameters: JSONValue?) throws(HeraldError) -> [(name: String, value: String)] {
        try pairs(from: members(of: parameters)).compactMap { key, value in value.map { (key, $0) } }
    }

    private static func members(of parameters: JSONValue?) throws(HeraldError) -> [String: JSONValue] {
        switch parameters {
        case nil, .null?:
            return [:]
        case .object(let members)?:
            return members
        case let other?:
            throw HeraldError(
                .invalidRequest,
                "Query and form parameters must be a JSON object of names and values, not \(other.kindName).")
        }
    }

    /// The pairs in order, unescaped; a `nil` value stands for `null` (the key alone).
    private static func pairs(from parameters: [String: JSONValue]) throws(HeraldError) -> [(String, String?)] {
        var pairs: [(String, String?)] = []
        for key in parameters.keys.sorted(by: Self.precedes) {
            if let value = parameters[key] {
                try appendPairs(key: key, value: value, to: &pairs)
            }
        }
        return pairs
    }

    private static func appendPairs(key: String, value: JSONValue, to pairs: inout [(String, String?)])
        throws(HeraldError)
    {
        switch value {
        case .object(let members):
            for nested in members.keys.sorted(by: Self.precedes) {
                if let member = members[nested] {
                    try appendPairs(key: "\(key)[\(nested)]", value: member, to: &pairs)
                }
            }
        case .array(let elements):
            for element in elements {
                try appendPairs(key: "\(key)[]", value: element, to: &pairs)
            }
        case .null:
            pairs.append((key, nil))
        case .bool(let flag):
            pairs.append((key, flag ? "1" : "0"))
        case .string(let text):
            pairs.append((key, text))
        case .number(let number):
            pairs.append((key, try text(of: number, named: key)))
        }
    }

    /// A number as text: whole numbers within `Int64` as integers (no fraction, no exponent), others in Swift's
    /// shortest round-trip form.
    static func text(of number: Double, named key: String) throws(HeraldError) -> String {
        guard number.isFinite else {
            throw HeraldError(.invalidRequest, "The parameter '\(key)' is \(number), which has no text form.")
        }
        return Int64(exactly: number).map { String($0) } ?? String(describing: number)
    }

    /// Key order: by Unicode scalar values, so the same parameters always give the same string.
    private static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.unicodeScalars.lexicographicallyPrecedes(rhs.unicodeScalars)
    }
}

extension JSONValue {
    /// "an array", "a string"…: for error messages.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
