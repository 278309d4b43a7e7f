import Foundation
import Herald
import Testing

@Suite("Header lookup and Content-Length")
struct HTTPHeadersTests {
    @Test("names compare case-insensitively for ASCII letters only, byte for byte otherwise")
    func caseInsensitiveNames() {
        let headers: HTTPHeaders = ["content-LENGTH": "5", "X-Ünicode": "a", "X_1": "b"]
        #expect(headers["Content-Length"] == "5")
        #expect(headers["CONTENT-length"] == "5")
        #expect(headers["Content-Lengtg"] == nil)
        #expect(headers["X-Ünicode"] == "a")
        // Only a-z fold: "_" (0x5F) and DEL-like pairs that differ by 0x20 outside letters don't match.
        #expect(headers["X\u{7F}1"] == nil)
        #expect(headers["x_1"] == "b")
        #expect(headers["X-ünicode"] == nil)
        #expect(headers.contains("content-length"))
        #expect(headers.values(for: "CONTENT-LENGTH") == ["5"])
    }

    @Test("expectedContentLength trims blanks and refuses what is not a non-negative number")
    func contentLength() {
        func length(_ value: String?) -> Int64? {
            var headers = HTTPHeaders()
            if let value { headers.add(name: "Content-Length", value: value) }
            return HTTPResponse(url: URL(string: "http://x.invalid/")!, statusCode: 200, headers: headers)
                .expectedContentLength
        }
        #expect(length("1024") == 1024)
        #expect(length(" \t42 ") == 42)
        #expect(length(nil) == nil)
        #expect(length("") == nil)
        #expect(length("-1") == nil)
        #expect(length("12abc") == nil)
        #expect(length("99999999999999999999") == nil)
        #expect(length("9223372036854775807") == Int64.max)
        #expect(length("9223372036854775808") == nil)
        #expect(length("0") == 0)
        #expect(length("+5") == nil)
        #expect(length("1 2") == nil)
        #expect(length(" \t ") == nil)
        #expect(length("٣") == nil)
    }

    @Test("a response is a value: changing a copy leaves the original, and equality and hashing compare values")
    func responseIsAValue() throws {
        let url = try #require(URL(string: "http://127.0.0.1/a"))
        let original = HTTPResponse(url: url, statusCode: 200, headers: ["Content-Length": "3"])
        var copy = original
        #expect(copy == original)
        copy.statusCode = 404
        copy.headers.add(name: "X-Extra", value: "1")
        copy.url = try #require(URL(string: "http://127.0.0.1/b"))
        copy.httpVersion = "HTTP/2"
        #expect(original.statusCode == 200)
        #expect(original.headers.fields.count == 1)
        #expect(original.url.absoluteString == "http://127.0.0.1/a")
        #expect(original.httpVersion == "HTTP/1.1")
        #expect(copy.statusCode == 404 && copy.headers["X-Extra"] == "1" && copy.httpVersion == "HTTP/2")
        #expect(copy != original)
        // Made apart, with the same values: equal, and the same hash.
        let twin = HTTPResponse(url: url, statusCode: 200, headers: ["Content-Length": "3"])
        #expect(twin == original)
        #expect(Set([twin, original]).count == 1)
        var unique = twin
        unique.statusCode = 201
        #expect(unique.statusCode == 201 && twin.statusCode == 200)
    }
}
