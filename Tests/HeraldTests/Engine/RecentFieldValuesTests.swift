import Testing

@testable import Herald
@testable import HeraldEngine

/// A common field whose value repeats the last one received is handed the same string again; anything else
/// is parsed from its bytes as before.
@Suite("Recent values of common response fields")
struct RecentFieldValuesTests {
    private static func field(_ line: [UInt8], _ values: RecentFieldValues) -> (name: String, value: String)? {
        guard
            case .field(let name, let value) = line.withUnsafeBytes({ ResponseHeadLine.parse($0, recentValues: values) }
            )
        else { return nil }
        return (name, value)
    }

    /// Where a string's bytes are stored: the same address means the same storage, not a copy.
    private static func storage(_ text: String) -> UInt {
        var text = text
        return text.withUTF8 { UInt(bitPattern: $0.baseAddress) }
    }

    @Test("the same bytes get the same string; other bytes a new one, which is kept next")
    func repeatedValue() throws {
        let values = RecentFieldValues()
        let line = Array("Date: Fri, 27 Nov 2026 10:40:55 GMT\r\n".utf8)
        let first = try #require(Self.field(line, values))
        let second = try #require(Self.field(line, values))
        #expect(first.name == "Date" && second.name == "Date")
        #expect(first.value == "Fri, 27 Nov 2026 10:40:55 GMT" && second.value == first.value)
        #expect(Self.storage(second.value) == Self.storage(first.value))
        let next = try #require(Self.field(Array("Date:   Fri, 27 Nov 2026 10:40:56 GMT  \r\n".utf8), values))
        #expect(next.value == "Fri, 27 Nov 2026 10:40:56 GMT")
        #expect(Self.storage(next.value) != Self.storage(first.value))
        let again = try #require(Self.field(Array("Date: Fri, 27 Nov 2026 10:40:56 GMT\r\n".utf8), values))
        #expect(Self.storage(again.value) == Self.storage(next.value))
        let empty = try #require(Self.field(Array("Date:\r\n".utf8), values))
        #expect(empty.value == "")
        #expect(try #require(Self.field(Array("Date: \r\n".utf8), values)).value == "")
    }

    @Test("a Set-Cookie or Location value is never kept")
    func credentialsAreNotKept() throws {
        for line in [
            "Set-Cookie: session=0123456789abcdefghijklmnopqrstuvwxyz", "Location: /next?token=0123456789abcdef",
        ] {
            let values = RecentFieldValues()
            let bytes = Array((line + "\r\n").utf8)
            let first = try #require(Self.field(bytes, values))
            let second = try #require(Self.field(bytes, values))
            #expect(first.value == second.value)
            #expect(Self.storage(first.value) != Self.storage(second.value))
        }
    }

    @Test("a value that isn't UTF-8 is decoded lossily, and the same bytes again get that decoding")
    func invalidUTF8() throws {
        let values = RecentFieldValues()
        let line = Array("Server: caf".utf8) + [0xE9] + Array(" and a long server name\r\n".utf8)
        let first = try #require(Self.field(line, values))
        let second = try #require(Self.field(line, values))
        #expect(first.value == "caf\u{FFFD} and a long server name")
        #expect(second.value == first.value)
        #expect(Self.storage(second.value) == Self.storage(first.value))
        // The decoded text's own bytes (with U+FFFD) are other bytes: decoded afresh, to the same text.
        let repaired = try #require(Self.field(Array("Server: caf\u{FFFD} and a long server name\r\n".utf8), values))
        #expect(repaired.value == first.value)
        #expect(Self.storage(repaired.value) != Self.storage(first.value))
    }

    @Test("a value longer than the longest kept is made every time")
    func longValue() throws {
        let values = RecentFieldValues()
        let long = String(repeating: "x", count: RecentFieldValues.longestKept + 1)
        let line = Array("ETag: \(long)\r\n".utf8)
        let first = try #require(Self.field(line, values))
        let second = try #require(Self.field(line, values))
        #expect(first.value == long && second.value == long)
        #expect(Self.storage(first.value) != Self.storage(second.value))
    }
}
