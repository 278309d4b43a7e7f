import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Request header lines as the server receives them")
struct RequestHeaderLinesTests {
    @Test("each field arrives as given: an empty value stays a field, a UTF-8 value keeps its bytes, order is kept")
    func fieldsArriveAsGiven() async throws {
        let fixture = try await SessionFixture.make()
        var headers = HTTPHeaders()
        headers.add(name: "X-Empty", value: "")
        // Blanks alone are an empty value too (not "remove the field", as curl would read them).
        headers.add(name: "X-Blank", value: " \t")
        headers.add(name: "X-Text", value: "caf\u{E9} \u{1F600}")
        headers.add(name: "X-Repeated", value: "one")
        headers.add(name: "X-Repeated", value: "two")
        let request = Request(url: fixture.server.url("/echo"), headers: headers)
        let (_, response) = try await fixture.session.data(for: request)
        #expect(response.statusCode == 200)
        let recorded = try #require(fixture.server.requests.first)
        let sent = recorded.headers.filter { $0.name.lowercased().hasPrefix("x-") }
        #expect(sent.map(\.name) == ["X-Empty", "X-Blank", "X-Text", "X-Repeated", "X-Repeated"])
        #expect(sent.map(\.value) == ["", "", "caf\u{E9} \u{1F600}", "one", "two"])
        try await fixture.tearDown()
    }

    @Test("a field the session's additional headers repeat goes out every time, unless the request sets that name")
    func repeatedAdditionalHeaders() async throws {
        var configuration = SessionConfiguration.default
        var additional = HTTPHeaders()
        additional.add(name: "X-Dup", value: "a")
        additional.add(name: "X-Dup", value: "b")
        additional.add(name: "X-Mine", value: "session")
        configuration.httpAdditionalHeaders = additional
        let fixture = try await SessionFixture.make(configuration: configuration)
        _ = try await fixture.session.data(
            for: Request(url: fixture.server.url("/echo"), headers: ["x-mine": "request"]))
        let recorded = try #require(fixture.server.requests.first)
        let sent = recorded.headers.filter { $0.name.lowercased().hasPrefix("x-") }
        // Before, the second X-Dup was dropped: the first was taken for a field of the request's.
        #expect(sent.map(\.name) == ["x-mine", "X-Dup", "X-Dup"])
        #expect(sent.map(\.value) == ["request", "a", "b"])
        try await fixture.tearDown()
    }

    @Test("the session's last header list serves only the same bytes: text equal under Unicode rules is not enough")
    func sharedListComparesBytes() async throws {
        let fixture = try await SessionFixture.make()
        // "é" decomposed, then composed: equal as Swift strings, different on the wire.
        for value in ["e\u{301}", "\u{e9}"] {
            _ = try await fixture.session.data(
                for: Request(url: fixture.server.url("/echo"), headers: ["X-Name": value]))
        }
        let sent = fixture.server.requests.map { recorded in
            recorded.headers.first { $0.name == "X-Name" }.map { Array($0.value.utf8) }
        }
        // Before, the second request went out with the first one's list, and so its bytes.
        #expect(sent == [Array("e\u{301}".utf8), Array("\u{e9}".utf8)])
        try await fixture.tearDown()
    }

    @Test("a caller's Content-Length or Transfer-Encoding never goes beside the engine's: the body frames itself")
    func framingIsTheEngines() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["Transfer-Encoding": "identity"]
        let fixture = try await SessionFixture.make(configuration: configuration)
        let request = Request(
            url: fixture.server.url("/echo"), method: "POST", headers: ["content-length": "0"], body: Data("a=1".utf8))
        let (_, response) = try await fixture.session.data(for: request)
        #expect(response.statusCode == 200)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headers.filter { $0.name.lowercased() == "content-length" }.map(\.value) == ["3"])
        #expect(recorded.headerValue("Transfer-Encoding") == nil)
        #expect(recorded.bodyByteCount == 3)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    /// The lines of a list, in order.
    private func lines(_ list: HeaderList) -> [String] {
        var lines: [String] = []
        var node = list.head
        while let current = node {
            if let data = current.pointee.data { lines.append(String(cString: data)) }
            node = current.pointee.next
        }
        return lines
    }

    @Test("a list holds the fields in order, then the cookies, Accept-Encoding and Expect unless the fields have them")
    func listLines() throws {
        let acceptEncoding = try #require(CurlFeatures.acceptEncodingHeader)
        let encodingLine = acceptEncoding.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var key = HeaderList.Key(
            headers: ["A": "1", "Empty": ""], cookie: "c=1", decodesContent: true, sendsBody: true)
        #expect(lines(HeaderList(key: key)) == ["A: 1", "Empty;", "Cookie: c=1", encodingLine, "Expect:"])
        key.headers = ["cookie": "mine", "accept-encoding": "identity", "EXPECT": "100-continue"]
        #expect(lines(HeaderList(key: key)) == ["cookie: mine", "accept-encoding: identity", "EXPECT: 100-continue"])
        key = HeaderList.Key(headers: [:], cookie: nil, decodesContent: false, sendsBody: false)
        #expect(lines(HeaderList(key: key)).isEmpty)
        #expect(HeaderList(key: key).head == nil)
    }

    @Test("a session shares its last list with the next transfer of the same fields, but never keeps credentials")
    func sessionSharesLastList() throws {
        let pool = EasyHandlePool(capacity: 1)
        let plain = HeaderList.Key(headers: ["User-Agent": "x"], cookie: nil, decodesContent: true, sendsBody: false)
        let first = pool.headerList(for: plain)
        #expect(pool.headerList(for: plain) === first)
        var other = plain
        other.headers.add(name: "X-More", value: "1")
        let second = pool.headerList(for: other)
        #expect(second !== first)
        #expect(pool.headerList(for: other) === second)
        #expect(pool.headerList(for: plain) !== first)  // only the last list is kept
        func key(_ headers: HeaderFields, cookie: String? = nil) -> HeaderList.Key {
            HeaderList.Key(headers: headers, cookie: cookie, decodesContent: true, sendsBody: false)
        }
        let secrets = [
            key(["authorization": "Basic eDp5"]), key(["Proxy-Authorization": "p"]), key(["Cookie": "a=b"]),
            key([:], cookie: "session=1"),
        ]
        for secret in secrets {
            #expect(secret.carriesSecrets)
            #expect(pool.headerList(for: secret) !== pool.headerList(for: secret))
        }
        #expect(!plain.carriesSecrets)
        pool.close()
    }
}
