import Foundation
@testable import Herald
import Testing

@Suite("Cache-Control parsing (RFC 9111 §5.2)")
struct CacheControlDirectivesTests {
    private static func parse(_ value: String) -> [String: String] {
        CacheControlDirectives(fieldValue: value).arguments
    }

    @Test("a comma inside a quoted argument does not end the directive")
    func quotedComma() {
        #expect(
            Self.parse(#"private="Set-Cookie, X-Trace", max-age=60"#) == [
                "private": "Set-Cookie, X-Trace", "max-age": "60",
            ])
    }

    @Test("a directive name inside a quoted argument is not a directive")
    func directiveInsideQuotes() {
        #expect(Self.parse(#"ext="a, no-store, b", max-age=60"#) == ["ext": "a, no-store, b", "max-age": "60"])
        #expect(Self.parse(#"private="x, max-age=60""#) == ["private": "x, max-age=60"])
    }

    @Test("backslash escapes in a quoted argument are unescaped")
    func quotedPair() {
        #expect(Self.parse(#"ext="say \"hi\", \\ ok", no-cache"#) == [#"ext"#: #"say "hi", \ ok"#, "no-cache": ""])
    }

    @Test("token and quoted forms of an argument are equivalent")
    func quotedAndTokenForms() {
        #expect(Self.parse(#"max-age="60""#) == Self.parse("max-age=60"))
    }

    @Test("names are lowercased, whitespace around elements and '=' is ignored, empty elements are skipped")
    func normalization() {
        #expect(
            Self.parse(" ,MAX-AGE = 5 ,, No-Store\t, Public ") == ["max-age": "5", "no-store": "", "public": ""])
    }

    @Test("the first occurrence of a repeated directive counts, across field lines too")
    func firstOccurrenceWins() {
        #expect(Self.parse("max-age=10, max-age=20") == ["max-age": "10"])
        let headers = HTTPHeaders([("Cache-Control", "max-age=30"), ("Cache-Control", "max-age=40, no-transform")])
        #expect(CacheControlDirectives(headers).arguments == ["max-age": "30", "no-transform": ""])
    }

    @Test("past many directives the first occurrence still counts, and a directive at the end is found")
    func manyDirectives() {
        let filler = (0..<40).map { "ext\($0)" }
        let headers = HTTPHeaders(
            [
                ("Cache-Control", (filler + ["max-age=10"]).joined(separator: ", ")),
                ("Cache-Control", "ext3=x, max-age=20, no-store"),
            ])
        let directives = CacheControlDirectives(headers)
        #expect(directives["max-age"] == "10")
        #expect(directives["ext3"] == "")
        #expect(directives["no-store"] == "")
        #expect(directives.arguments.count == 42)
    }

    @Test(
        "a malformed element is skipped up to the next top-level comma, and the rest is still read",
        arguments: [
            (#"=5, max-age=60"#, ["max-age": "60"]),
            (#""no-store", max-age=60"#, ["max-age": "60"]),
            (#"max-age=, public"#, ["public": ""]),
            (#"max-age=5 6, public"#, ["public": ""]),
            (#"no-store"x, y", public"#, ["public": ""]),
            (#"ext="unterminated, max-age=60"#, ["ext": "unterminated, max-age=60"]),
            ("m\u{e4}x-age=1, public", ["public": ""]),
        ])
    func malformed(value: String, expected: [String: String]) {
        #expect(Self.parse(value) == expected)
    }

    @Test("freshness ignores a max-age that only appears inside a quoted argument")
    func freshnessFromQuotedArgument() {
        let url = URL(fileURLWithPath: "/")
        let quoted = HTTPResponse(url: url, statusCode: 200, headers: ["Cache-Control": #"private="x, max-age=60""#])
        #expect(ResponseCachePolicy.freshnessLifetime(of: quoted, storedAt: Date()) == nil)
        let real = HTTPResponse(
            url: url, statusCode: 200, headers: ["Cache-Control": #"ext="a, no-store", max-age=60"#])
        #expect(ResponseCachePolicy.freshnessLifetime(of: real, storedAt: Date()) == 60)
    }

    @Test(
        "max-age is delta-seconds: digits only, capped at 2^31; anything else means stale",
        arguments: [
            ("60", 60.0), (#""60""#, 60.0), ("0", 0.0), ("99999999999999999999", 2_147_483_648.0), ("1.5", 0.0),
            ("-1", 0.0), ("6O", 0.0),
        ])
    func maxAgeValues(argument: String, lifetime: Double) {
        let response = HTTPResponse(
            url: URL(fileURLWithPath: "/"), statusCode: 200, headers: ["Cache-Control": "max-age=\(argument)"])
        #expect(ResponseCachePolicy.freshnessLifetime(of: response, storedAt: Date()) == lifetime)
    }
    @Test(
        "contains(_:in:) answers as the parsed directives do, for every field line, without keeping them",
        arguments: [
            "no-store", "max-age=5, No-Store", " ,NO-STORE\t", #"private="no-store""#, "no-store=", "no-storex",
            #"ext="a, no-store", max-age=60"#, #""no-store", public"#, "no-store 1, public", "public",
            "", #"ext="unterminated, no-store"#,
        ])
    func containsMatchesParsing(value: String) {
        let parsed = Self.parse(value)["no-store"] != nil
        #expect(CacheControlDirectives.contains("no-store", in: ["Cache-Control": value]) == parsed)
        let twoLines = HTTPHeaders([("Cache-Control", "max-age=1"), ("cache-control", value)])
        #expect(CacheControlDirectives.contains("no-store", in: twoLines) == parsed)
        #expect((CacheControlDirectives(twoLines)["no-store"] != nil) == parsed)
    }

    @Test("contains(_:in:) reads only Cache-Control fields")
    func containsReadsCacheControlOnly() {
        #expect(
            !CacheControlDirectives.contains("no-store", in: ["Pragma": "no-store", "X-Cache-Control": "no-store"]))
        #expect(CacheControlDirectives.contains("no-store", in: ["Pragma": "no-cache", "CACHE-CONTROL": "no-store"]))
    }
}
