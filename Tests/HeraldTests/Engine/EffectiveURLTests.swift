import Foundation
import Testing

@testable import Herald

/// A response's URL is the request's unless curl reports another one (a redirect it followed); the check
/// compares curl's C string with the request's URL in place.
@Suite("The response URL is parsed again only when curl's differs")
struct EffectiveURLTests {
    @Test(
        "curl's C string matches a URL's text only byte for byte, to the end",
        arguments: [
            ("http://127.0.0.1:8080/a?b=1", "http://127.0.0.1:8080/a?b=1", true),
            ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a?b=1", false),
            ("http://127.0.0.1:8080/a?b=1", "http://127.0.0.1:8080/a", false),
            ("http://127.0.0.1:8080/A", "http://127.0.0.1:8080/a", false),
            ("", "", true),
            ("", "x", false),
            ("x", "", false),
            ("http://h/é", "http://h/é", true),
        ])
    func sameText(curl: String, text: String, same: Bool) {
        #expect(curl.withCString { Transfer.sameText($0, text) } == same)
    }

    @Test("a text with a NUL never matches the C string it would be cut at")
    func embeddedNUL() {
        #expect("http://h/a".withCString { Transfer.sameText($0, "http://h/a\u{0}b") } == false)
        #expect("http://h/a".withCString { Transfer.sameText($0, "http://h/a\u{0}") } == false)
    }
}
