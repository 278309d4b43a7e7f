import HeraldEngine

/// The directives of `Cache-Control` header fields, parsed as RFC 9111 §5.2 writes them:
///
///     Cache-Control   = #cache-directive
///     cache-directive = token [ "=" ( token / quoted-string ) ]
///
/// A quoted argument may hold commas and `=` (`private="Set-Cookie, X-Trace"`) and backslash escapes
/// (RFC 9110 §5.6.4), so the field is scanned character by character instead of split on commas.
/// Names are lowercased; arguments are unquoted and unescaped (`max-age="60"` and `max-age=60` are
/// equivalent, §5.2). When a directive appears more than once, the first occurrence counts (§4.2.1).
/// An element that is not a token (`=5`, `"x"`) is skipped, as is the rest of an element after a
/// malformed argument, up to the next top-level comma.
///
/// Every cache lookup and every response a cache sees parses one or two of these, so the directives are
/// kept as a short list in field order (a field has a handful), scanned from the field value's own bytes:
/// no copy of the value, and no hashing but for a field of more than 16 directives; ``contains(_:in:)``
/// keeps none.
struct CacheControlDirectives: Equatable {
    private struct Directive: Equatable {
        var name: String
        var argument: String
    }

    private var directives: [Directive] = []
    /// The names in ``directives``, once there are more than a field usually has: a server's field of thousands of
    /// directives would otherwise be checked for repeats in time quadratic in their number.
    private var names: Set<String>?
    private static let namesAfter = 16

    /// Directive name (lowercased) → argument (`""` for a directive without one).
    var arguments: [String: String] {
        Dictionary(directives.map { ($0.name, $0.argument) }, uniquingKeysWith: { first, _ in first })
    }

    /// The directives of every `Cache-Control` field line in `headers`, in order.
    init(_ headers: HTTPHeaders) {
        for field in headers.storage.fields where field.name.caseInsensitiveEquals("Cache-Control") {
            parse(field.value)
        }
    }

    /// The directives of one field value.
    init(fieldValue: String) {
        parse(fieldValue)
    }

    /// The argument of directive `name` (lowercase), `""` when it has none, `nil` when it is absent.
    subscript(name: String) -> String? {
        directives.first { $0.name == name }?.argument
    }

    /// Whether a `Cache-Control` field of `headers` has directive `name` (lowercase): the question most
    /// responses are asked first (`no-store`), answered without keeping the directives.
    static func contains(_ name: String, in headers: HTTPHeaders) -> Bool {
        var found = false
        for field in headers.storage.fields where !found && field.name.caseInsensitiveEquals("Cache-Control") {
            forEachDirective(in: field.value) { directive, _ in
                found = directive == name
                return !found
            }
        }
        return found
    }

    private mutating func parse(_ value: String) {
        Self.forEachDirective(in: value) { name, argument in
            if directives.count < Self.namesAfter {
                if self[name] == nil { directives.append(Directive(name: name, argument: argument)) }
            } else {
                var known = names ?? Set(directives.map(\.name))
                names = nil  // held once, so the insertion doesn't copy it
                if known.insert(name).inserted { directives.append(Directive(name: name, argument: argument)) }
                names = known
            }
            return true
        }
    }

    /// Calls `body` with each well-formed directive of `value` in order (its lowercased name and argument),
    /// until `body` returns `false`.
    private static func forEachDirective(in value: String, _ body: (String, String) -> Bool) {
        var value = value
        value.withUTF8 { bytes in
            var scanner = Scanner(bytes)
            while !scanner.isAtEnd {
                scanner.skipWhitespace()
                let name = scanner.token(lowercased: true)
                scanner.skipWhitespace()
                var argument = ""
                var wellFormed = !name.isEmpty
                if scanner.consume(UInt8(ascii: "=")) {
                    scanner.skipWhitespace()
                    if let quoted = scanner.quotedString() {
                        argument = quoted
                    } else {
                        argument = scanner.token()
                        wellFormed = wellFormed && !argument.isEmpty
                    }
                    scanner.skipWhitespace()
                }
                // Anything before the next comma makes the element malformed (`max-age=5 6`, `a"b"`).
                if !scanner.isAtEnd, scanner.peek != UInt8(ascii: ",") {
                    wellFormed = false
                    scanner.skipElement()
                }
                _ = scanner.consume(UInt8(ascii: ","))
                if wellFormed, !body(name, argument) { return }
            }
        }
    }
}

/// A cursor over the bytes of one field value, valid while the value's storage is (inside `withUTF8`).
private struct Scanner: ~Copyable {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }
    var peek: UInt8? { isAtEnd ? nil : bytes[index] }

    mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    mutating func skipWhitespace() {
        while let byte = peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { index += 1 }
    }

    /// The longest run of `tchar` (RFC 9110 §5.6.2) at the cursor, possibly empty; with `lowercased`, its
    /// ASCII letters lowercased (a copy only when it has an uppercase one).
    mutating func token(lowercased: Bool = false) -> String {
        let start = index
        var hasUppercase = false
        while let byte = peek, Self.isTokenCharacter(byte) {
            hasUppercase = hasUppercase || Self.isUppercase(byte)
            index += 1
        }
        let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard lowercased, hasUppercase else { return String(decoding: token, as: UTF8.self) }
        return String(decoding: token.lazy.map { Self.isUppercase($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static func isUppercase(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// A quoted-string at the cursor, unescaped, or `nil` when the cursor is not on one. An unterminated
    /// string runs to the end of the value (the element is then the last one anyway).
    mutating func quotedString() -> String? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        var content: [UInt8] = []
        while let byte = peek {
            index += 1
            if byte == UInt8(ascii: "\"") { return String(decoding: content, as: UTF8.self) }
            if byte == UInt8(ascii: "\\"), let escaped = peek {
                index += 1
                content.append(escaped)
            } else {
                content.append(byte)
            }
        }
        return String(decoding: content, as: UTF8.self)
    }

    /// Moves to the next top-level comma (or the end), stepping over quoted strings.
    mutating func skipElement() {
        while let byte = peek, byte != UInt8(ascii: ",") {
            if byte == UInt8(ascii: "\"") {
                _ = quotedString()
            } else {
                index += 1
            }
        }
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"),
            UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
            UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
