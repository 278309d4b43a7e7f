import Foundation
import Testing

@testable import Herald

@Suite("JSON parser")
struct JSONParserTests {
    @Test(
        "valid JSON texts parse to the expected values",
        arguments: [
            (#"{"a":[1,-2.5,3e2,0,-0.0,1E-2],"b":{"c":"d"}}"#, ["a": [1, -2.5, 300, 0, -0.0, 0.01], "b": ["c": "d"]]),
            (#"  [ true , false , null ]  "#, [true, false, nil] as JSONValue),
            (#""esc \" \\ \/ \b \f \n \r \t""#, "esc \" \\ / \u{08} \u{0C} \n \r \t"),
            (#""\u00e9\u4e2d\ud83d\ude00""#, "é中😀"),
            ("\"héllo ✓\"", "héllo ✓"),
            (#"{"k":1,"k":2}"#, ["k": 2]),
            ("[]", []),
            ("{}", [:]),
            ("123456789012345678", .number(123_456_789_012_345_680)),  // beyond 2^53: correctly rounded
            ("9007199254740993", .number(9_007_199_254_740_992)),  // 2^53 + 1 rounds to even
        ] as [(String, JSONValue)])
    func parses(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(Data(text.utf8)) == expected)
    }

    @Test("agrees with JSONDecoder on a mixed document")
    func agreesWithFoundation() throws {
        let text = #"[{"id":1,"name":"item","ok":true,"score":0.3333333333333333,"tags":["a","b"],"x":null}]"#
        let data = Data(text.utf8)
        #expect(try JSONParser.parse(data) == JSONDecoder().decode(JSONValue.self, from: data))
    }

    @Test("a leading UTF-8 byte-order mark is skipped")
    func byteOrderMark() throws {
        #expect(try JSONParser.parse(Data([0xEF, 0xBB, 0xBF]) + Data("[1]".utf8)) == [1])
    }

    @Test(
        "malformed input fails with a JSONParseError, never traps",
        arguments: [
            "", "[", "]", "{", #"{"a"}"#, #"{"a":}"#, #"{a:1}"#, "[1,]", "[1 2]", "01", "-", "1.", "1e", ".5", "+1",
            "tru", "nul", "True", #""unterminated"#, "\"a\u{01}b\"", #""\x""#, #""\u12""#, #""\ud800""#,
            #""\ud800\u0041""#, #""\udc00""#, "1e999", "[1] x", "NaN", "'a'",
        ])
    func rejects(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Data(text.utf8)) }
    }

    @Test("a member name with more than 30 combining marks in a row is an error, parsed in linear time")
    func combiningMarkRuns() throws {
        // One name of 32,000 marks in reverse canonical order, a 64 KiB body: before, hashing it took over a second
        // (the standard library sorts each run of marks by insertion), a 1 MiB body's minutes.
        var hostile = "a"
        hostile.unicodeScalars.append(contentsOf: repeatElement(Unicode.Scalar(0x301)!, count: 16_000))
        hostile.unicodeScalars.append(contentsOf: repeatElement(Unicode.Scalar(0x316)!, count: 16_000))
        let started = ContinuousClock.now
        let error = try #require(throws: JSONParseError.self) {
            try JSONParser.parse(Data(#"{"x":1,"\#(hostile)":2}"#.utf8))
        }
        #expect(error.reason.contains("combining marks"))
        #expect(error.offset == 7)
        // A generous bound, far below the second the sort took: the check is linear.
        #expect(ContinuousClock.now - started < .milliseconds(500))
        // Thirty marks in a row are allowed (UAX #15's stream-safe limit), and so are marks in values.
        let thirty = "a" + String(repeating: "\u{301}", count: 30)
        let zalgo = "z" + String(repeating: "\u{316}", count: 200)
        #expect(try JSONParser.parse(Data(#"{"\#(thirty)":"\#(zalgo)"}"#.utf8)) == [thirty: .string(zalgo)])
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Data(#"{"\#(thirty)\#u{302}":1}"#.utf8)) }
    }

    @Test("member names equal only under Unicode normalization are an error, not one silently lost")
    func canonicallyEquivalentNames() throws {
        let error = try #require(throws: JSONParseError.self) {
            try JSONParser.parse(Data(#"{"\u00e9":1,"e\u0301":2}"#.utf8))
        }
        #expect(error.reason.contains("normalization"))
        // A long name is shown cut short: the message doesn't grow with the body.
        let long = String(repeating: "n", count: 100_000)
        let longError = try #require(throws: JSONParseError.self) {
            try JSONParser.parse(Data(#"{"\#(long)\u00e9":1,"\#(long)e\u0301":2}"#.utf8))
        }
        #expect(longError.reason.utf8.count < 300)
        // The same bytes twice are a repeated name, as before: the last value, or the first when asked.
        #expect(try JSONParser.parse(Data(#"{"\u00e9":1,"\u00e9":2}"#.utf8)) == ["é": 2])
        #expect(try JSONParser.parse(Data(#"{"k":1,"k":2,"k":3}"#.utf8), keepsFirstDuplicate: true) == ["k": 1])
    }

    @Test("a JSON null decoded as an optional JSONValue is nil, as an empty body is")
    func nullAsOptional() throws {
        let response = makeResponse(contentType: "application/json")
        let serializer = DecodableResponseSerializer(JSONValue?.self)
        #expect(try serializer.serialize(response: response, data: Data("null".utf8)) == JSONValue?.none)
        #expect(try serializer.serialize(response: response, data: Data("[null]".utf8)) == [nil])
    }

    @Test("invalid UTF-8 inside a string is rejected")
    func invalidUTF8() throws {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Data([0x22, 0xC3, 0x28, 0x22])) }
        // The offset is the invalid byte's, not the string's.
        let error = try #require(throws: JSONParseError.self) {
            try JSONParser.parse(Data([0x22, 0x61, 0x62, 0x63, 0xFF, 0x22]))
        }
        #expect(error.offset == 4)
    }

    @Test("nesting is capped at 512 levels")
    func depthLimit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONParser.parse(Data(ok.utf8)) }
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let error = try #require(throws: JSONParseError.self) { try JSONParser.parse(Data(deep.utf8)) }
        #expect(error.reason.contains("512"))
        #expect(error.offset == 512)
    }
}
