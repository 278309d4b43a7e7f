import Foundation
@testable import Herald
import Testing

@Suite("Requests are validated before any byte is sent")
struct RequestValidationTests {
    let session = SessionManager(notificationCenter: .init())

    private func creationError(_ request: Request) -> HeraldError? {
        do {
            _ = try session.dataTask(with: request)
            return nil
        } catch {
            return error
        }
    }

    @Test("a header value with CR or LF is refused with invalidRequest")
    func headerInjection() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        #expect(creationError(Request(url: url, headers: ["X-A": "1\r\nX-Injected: 1"]))?.code == .invalidRequest)
        #expect(creationError(Request(url: url, headers: ["X-A\n": "1"]))?.code == .invalidRequest)
        #expect(creationError(Request(url: url, headers: ["Bad Name": "1"]))?.code == .invalidRequest)
    }

    @Test("a header name may use exactly RFC 9110's token characters", arguments: 0...255)
    func tokenCharacters(byte: Int) {
        let scalar = Character(Unicode.Scalar(UInt8(byte)))
        let isToken = (scalar.isASCII && (scalar.isLetter || scalar.isNumber)) || "!#$%&'*+-.^_`|~".contains(scalar)
        let name = "X" + String(scalar) + "Y"
        #expect(Request.isValidField(name: name, value: "v") == isToken, "byte \(byte)")
    }

    @Test("a method that is not an HTTP token is refused with invalidRequest")
    func badMethod() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        #expect(creationError(Request(url: url, method: "GET /x HTTP/1.1\r\n"))?.code == .invalidRequest)
        #expect(creationError(Request(url: url, method: ""))?.code == .invalidRequest)
    }

    @Test("schemes other than http and https are refused with unsupportedURL")
    func dangerousSchemes() throws {
        for text in ["file:///etc/passwd", "gopher://127.0.0.1/", "dict://127.0.0.1/", "ldap://127.0.0.1/"] {
            let url = try #require(URL(string: text))
            #expect(creationError(Request(url: url))?.code == .unsupportedURL, "\(text)")
        }
    }

    @Test("a URL without a host is refused with badURL")
    func missingHost() throws {
        let url = try #require(URL(string: "http:///path"))
        #expect(creationError(Request(url: url))?.code == .badURL)
    }

    @Test("new tasks start suspended and a valid request is accepted")
    func startsSuspended() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        let task = try session.dataTask(with: Request(url: url, method: "OPTIONS", headers: ["X-Ok": "a b"]))
        #expect(task.state == .suspended)
        task.cancel()
    }
}
