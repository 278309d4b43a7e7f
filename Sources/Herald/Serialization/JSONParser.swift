import Foundation

/// Why a body is not valid JSON: the ``HeraldError/underlying`` error of a failed ``JSONResponseSerializer``.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The byte offset in the body where parsing failed.
    public let offset: Int
    /// What was wrong at that offset.
    public let reason: String

    /// `"<reason> at byte <offset>"`.
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser from UTF-8 bytes straight to ``JSONValue``.
///
/// It is 3.6–17.6× faster than `JSONSerialization` plus a conversion of its `Any` tree to `JSONValue`,
/// and faster still than decoding `JSONValue` through `JSONDecoder` (each value is found by trying every
/// type in turn, and each miss throws); `make bench-json` measures all three (Docs/Performance.md). Input
/// is server-controlled, so nothing traps: nesting is capped at ``maximumDepth`` so hostile input can't
/// exhaust the stack, and every malformed byte becomes a ``JSONParseError``. `make fuzz` runs it under
/// libFuzzer (the `json` target).
struct JSONParser: ~Copyable {
    /// The deepest nesting of arrays and objects accepted.
    static let maximumDepth = 512

    /// The most combining marks (scalars of a canonical combining class other than 0) a member name may hold in a
    /// row: UAX #15's stream-safe limit. A dictionary hashes a name in its normalized form, and the standard
    /// library sorts each run of marks by insertion, in time that grows with the square of the run: one name of
    /// 32,000 marks in reverse order (a 64 KiB body) took over a second to hash, one of a 1 MiB body minutes.
    static let maximumCombiningMarksInARow = 30

    private let bytes: UnsafeBufferPointer<UInt8>
    private let keepsFirstDuplicate: Bool
    private var index = 0
    private var depth = 0

    private init(bytes: UnsafeBufferPointer<UInt8>, keepsFirstDuplicate: Bool) {
        self.bytes = bytes
        self.keepsFirstDuplicate = keepsFirstDuplicate
    }

    /// Parses one JSON text (a leading UTF-8 byte-order mark is skipped; surrounding whitespace is allowed).
    /// A repeated member name keeps its last value, as `JSONSerialization` does; with `keepsFirstDuplicate`, its
    /// first, as `JSONDecoder` does. Names equal only under Unicode canonical equivalence are an error.
    static func parse(_ data: Data, keepsFirstDuplicate: Bool = false) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { raw in
            var parser = JSONParser(bytes: raw.bindMemory(to: UInt8.self), keepsFirstDuplicate: keepsFirstDuplicate)
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        return try result.get()
    }

    private mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected data after the JSON value") }
        return value
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of data") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if consume(UInt8(ascii: "}")) {
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let keyStart = index
            let key = try parseString()
            if Self.exceedsCombiningMarkLimit(key) {
                throw JSONParseError(
                    offset: keyStart,
                    reason: "a member name with more than \(Self.maximumCombiningMarksInARow) combining marks in a row")
            }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw failure("expected ':'") }
            let value = try parseValue()
            // One lookup for a new name; a repeated one is looked at again. The dictionary keeps the name it was
            // first given.
            if let earlier = members.updateValue(value, forKey: key) {
                // Swift compares strings by canonical equivalence: "\u00e9" and "e\u0301" are one key to a
                // dictionary, but two names to the server. Keeping one would silently drop the other's value.
                guard let stored = members.index(forKey: key), members[stored].key.utf8.elementsEqual(key.utf8) else {
                    // The name cut short: a server's name can be as long as the body.
                    let shown = key.count > 100 ? String(key.prefix(100)) + "…" : key
                    throw failure("two member names that differ only in Unicode normalization (\(shown))")
                }
                if keepsFirstDuplicate { members[key] = earlier }
            }
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "}")) { break }
            throw failure("expected ',' or '}'")
        }
        depth -= 1
        return .object(members)
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) {
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "]")) { break }
            throw failure("expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) levels deep") }
        index += 1
    }

    /// Whether `name` holds more than ``maximumCombiningMarksInARow`` combining marks in a row. Linear; a name
    /// without a scalar from U+0300 on (none below combines) costs one pass over its bytes.
    static func exceedsCombiningMarkLimit(_ name: String) -> Bool {
        // U+0300, the first scalar that can combine, is 0xCC 0x80 in UTF-8: a name of lower bytes holds none.
        guard !name.utf8.allSatisfy({ $0 < 0xCC }) else { return false }
        var run = 0
        for scalar in name.unicodeScalars {
            if scalar.value < 0x300 || scalar.properties.canonicalCombiningClass == .notReordered {
                run = 0
            } else {
                run += 1
                if run > maximumCombiningMarksInARow { return true }
            }
        }
        return false
    }

    /// Parses a string starting at its opening quote.
    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let string = try makeString(
                    UnsafeBufferPointer(rebasing: bytes[start..<index]), at: start, locatingFaults: true)
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("unescaped control character in a string") }
            index += 1
        }
        guard index < bytes.count else { throw failure("unterminated string") }
        return try parseEscapedString(prefix: UnsafeBufferPointer(rebasing: bytes[start..<index]), start: start)
    }

    private mutating func parseEscapedString(prefix: UnsafeBufferPointer<UInt8>, start: Int) throws(JSONParseError)
        -> String
    {
        var utf8 = Array(prefix)
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try utf8.withUnsafeBufferPointer { buffer throws(JSONParseError) in
                    try makeString(buffer, at: start)
                }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unterminated string") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: try parseUnicodeEscape())
                default: throw failure("invalid escape")
                }
            case 0..<0x20:
                throw failure("unescaped control character in a string")
            default:
                utf8.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// Parses the `XXXX` after `\u` (and a following `\uXXXX` low surrogate) into UTF-8.
    private mutating func parseUnicodeEscape() throws(JSONParseError) -> String.UTF8View {
        let first = try parseHex4()
        var scalarValue = UInt32(first)
        if (0xD800..<0xDC00).contains(first) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else {
                throw failure("unpaired surrogate in \\u escape")
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw failure("unpaired surrogate in \\u escape") }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("unpaired surrogate in \\u escape") }
        return String(Character(scalar)).utf8
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw failure("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// The string of `utf8`, which starts at byte `offset` of the body. An invalid sequence is reported at its
    /// own byte when `locatingFaults` (the bytes are the body's, one for one), at `offset` otherwise (a string
    /// with escapes, whose bytes are decoded ones).
    private func makeString(
        _ utf8: UnsafeBufferPointer<UInt8>, at offset: Int, locatingFaults: Bool = false
    ) throws(JSONParseError) -> String {
        // ASCII needs no validation; `String(validating:as:)` is generic and costs a metadata lookup per call.
        if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw JSONParseError(
                offset: offset + (locatingFaults ? Self.firstInvalidUTF8(in: utf8) : 0),
                reason: "invalid UTF-8 in a string")
        }
        return string
    }

    /// Where the first invalid UTF-8 sequence of `utf8` starts.
    private static func firstInvalidUTF8(in utf8: UnsafeBufferPointer<UInt8>) -> Int {
        var iterator = utf8.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var position = 0
        while case .valid(let scalar) = parser.parseScalar(from: &iterator) { position += scalar.count }
        return position
    }

    /// Parses a number with RFC 8259's grammar: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
    private mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        _ = consume(UInt8(ascii: "-"))
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            skipDigits()
        }
        let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
        // Up to 15 digits fit a Double exactly, so small integers skip the string conversion.
        if isInteger, text.count <= 16 {
            var magnitude: Int64 = 0
            for byte in text where byte != UInt8(ascii: "-") {
                magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            if magnitude < 1 << 53 { return text[0] == UInt8(ascii: "-") ? -Double(magnitude) : Double(magnitude) }
        }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw JSONParseError(offset: start, reason: "number out of range")
        }
        return value
    }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("invalid literal") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where bytes[index + offset] != expected[offset] { throw failure("invalid literal") }
        index += count
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func failure(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }
}
