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
}
