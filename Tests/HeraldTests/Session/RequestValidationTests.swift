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

    @Test("a header value may hold any byte but a control character other than tab, at any place", arguments: 0...255)
    func valueCharacters(byte: Int) {
        let scalar = Unicode.Scalar(UInt8(byte))
        let allowed = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
        // Short values, and long ones whose eight-byte words put the byte at every offset.
        for prefix in ["", "a", "abcdefg", "abcdefgh", String(repeating: "x", count: 21)] {
            let value = prefix + String(Character(scalar)) + "z"
            #expect(Request.isValidField(name: "X-V", value: value) == allowed, "byte \(byte) after \(prefix.count)")
        }
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

    @Test("a HEAD with a body, or an upload by HEAD, is refused with invalidRequest: libcurl would drop the body")
    func headWithBody() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        #expect(creationError(Request(url: url, method: "HEAD", body: Data("x".utf8)))?.code == .invalidRequest)
        #expect(creationError(Request(url: url, method: "HEAD", body: Data())) == nil)
        #expect(creationError(Request(url: url, method: "HEAD")) == nil)
        #expect(throws: HeraldError.self) {
            _ = try session.uploadTask(with: Request(url: url, method: "HEAD"), from: Data("x".utf8))
        }
    }

    @Test("schemes other than http and https are refused with unsupportedURL")
    func dangerousSchemes() throws {
        for text in ["file:///etc/passwd", "gopher://127.0.0.1/", "dict://127.0.0.1/", "ldap://127.0.0.1/"] {
            let url = try #require(URL(string: text))
            #expect(creationError(Request(url: url))?.code == .unsupportedURL, "\(text)")
        }
    }

    @Test("the scheme is checked against the session's allowed list, short or long, ignoring case")
    func allowedSchemes() throws {
        let url = try #require(URL(string: "HTTP://127.0.0.1:1/"))
        let ftp = try #require(URL(string: "ftp://127.0.0.1:1/"))
        let short: Set = ["http", "https"]
        let long: Set = ["http", "https", "ftp", "ftps", "ws", "wss"]
        for allowed in [short, long] {
            #expect(throws: Never.self) { try Request(url: url).validate(allowedProtocols: allowed) }
            #expect(throws: Never.self) { try Request(url: ftp).validate(allowedProtocols: allowed.union(["ftp"])) }
            let refused = #expect(throws: HeraldError.self) {
                try Request(url: ftp).validate(allowedProtocols: allowed.subtracting(["ftp"]))
            }
            #expect(refused?.code == .unsupportedURL)
        }
    }

    @Test("a URL without a host is refused with badURL")
    func missingHost() throws {
        let url = try #require(URL(string: "http:///path"))
        #expect(creationError(Request(url: url))?.code == .badURL)
        // The host is checked as written: a percent-encoded one is still a host.
        let encoded = try #require(URL(string: "http://%6C%6F%63%61%6C%68%6F%73%74:1/"))
        #expect(creationError(Request(url: encoded)) == nil)
    }

    @Test("a file: URL is refused with badURL even when the session allows file and it names a host")
    func fileURLWithHost() throws {
        var configuration = SessionConfiguration()
        configuration.allowedProtocols = ["http", "https", "file"]
        let session = SessionManager(configuration: configuration, notificationCenter: .init())
        for text in ["file://localhost/etc/hostname", "file://127.0.0.1/etc/hostname", "file:///etc/hostname"] {
            let url = try #require(URL(string: text))
            let refused = #expect(throws: HeraldError.self) { try session.dataTask(with: Request(url: url)) }
            #expect(refused?.code == .badURL, "\(text)")
        }
    }

    @Test("a request timeout that is negative or NaN is refused with invalidRequest; 0 means none")
    func requestTimeout() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        for seconds in [-1, -0.001, .nan, -.infinity] as [TimeInterval] {
            #expect(creationError(Request(url: url, timeoutInterval: seconds))?.code == .invalidRequest, "\(seconds)")
        }
        for seconds in [0, 0.5, .infinity] as [TimeInterval] {
            #expect(creationError(Request(url: url, timeoutInterval: seconds)) == nil, "\(seconds)")
        }
    }

    @Test(
        "settings that can't be used make every task factory throw invalidRequest, naming the setting",
        arguments: [
            "timeoutIntervalForRequest", "timeoutIntervalForResource", "maximumConnectionsPerHost",
            "maximumConnectionsTotal", "maximumRedirects", "maximumResponseSize", "maximumHeaderSize", "lowercase",
            "libcurl doesn't speak",
        ])
    func unusableSettings(named name: String) throws {
        var configuration = SessionConfiguration()
        switch name {
        case "timeoutIntervalForRequest": configuration.timeoutIntervalForRequest = -1
        case "timeoutIntervalForResource": configuration.timeoutIntervalForResource = .nan
        case "maximumConnectionsPerHost": configuration.maximumConnectionsPerHost = -1
        case "maximumConnectionsTotal": configuration.maximumConnectionsTotal = -2
        case "maximumRedirects": configuration.maximumRedirects = -1
        case "maximumResponseSize": configuration.maximumResponseSize = -1
        case "maximumHeaderSize": configuration.maximumHeaderSize = -1
        case "lowercase": configuration.allowedProtocols = ["http", "HTTPS"]
        default: configuration.allowedProtocols = ["http", "https", "ws-not-a-scheme"]
        }
        let session = SessionManager(configuration: configuration, notificationCenter: .init())
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        let refused = #expect(throws: HeraldError.self) { try session.dataTask(with: Request(url: url)) }
        #expect(refused?.code == .invalidRequest)
        #expect(refused?.message.contains(name) == true, "\(String(describing: refused))")
        #expect(throws: HeraldError.self) { try session.downloadTask(with: Request(url: url)) }
    }

    @Test("the default settings, and limits of 0, are usable")
    func usableSettings() throws {
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 0
        configuration.maximumResponseSize = 0
        configuration.timeoutIntervalForResource = 0
        configuration.allowedProtocols = ["http", "https", "ftp"]
        for configuration in [SessionConfiguration(), configuration] {
            let session = SessionManager(configuration: configuration, notificationCenter: .init())
            let url = try #require(URL(string: "http://127.0.0.1:1/"))
            #expect(throws: Never.self) { try session.dataTask(with: Request(url: url)).cancel() }
        }
    }

    @Test("new tasks start suspended and a valid request is accepted")
    func startsSuspended() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/"))
        let task = try session.dataTask(with: Request(url: url, method: "OPTIONS", headers: ["X-Ok": "a b"]))
        #expect(task.state == .suspended)
        task.cancel()
    }

    @Test("CR, LF and NUL are found at every position of strings of every length up to 40, and nothing else is")
    func lineBreakScan() {
        // Bytes one away from the three, and bytes with the high bit set, which a word-wide test could confuse.
        let innocent: [UInt8] = [0x01, 0x09, 0x0B, 0x0C, 0x0E, 0x1A, 0x20, 0x7F, 0x80, 0x8A, 0x8D, 0xFF]
        for length in 0...40 {
            let clean = (0..<length).map { innocent[$0 % innocent.count] }
            #expect(!clean.withUnsafeBufferPointer(Request.containsLineBreakOrNUL(bytes:)), "length \(length)")
            for position in 0..<length {
                for bad: UInt8 in [0x0D, 0x0A, 0x00] {
                    var bytes = clean
                    bytes[position] = bad
                    #expect(
                        bytes.withUnsafeBufferPointer(Request.containsLineBreakOrNUL(bytes:)),
                        "length \(length), byte \(bad) at \(position)")
                }
            }
        }
        #expect(!Request.containsLineBreakOrNUL("https://127.0.0.1/caf\u{E9}?q=\u{1F600}&x=1"))
        #expect(Request.containsLineBreakOrNUL("https://127.0.0.1/a-long-path-before-the-break\r\nX: y"))
        #expect(Request.containsLineBreakOrNUL("short\n"))
    }
}
