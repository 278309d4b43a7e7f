import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Content decoding: Accept-Encoding and encoded bodies")
struct ContentDecodingTests {
    @Test("a request into memory asks for every coding libcurl decodes, once, on every hop")
    func acceptEncodingSent() async throws {
        let codings = try #require(CurlFeatures.contentEncodings)
        // This machine's libcurl: zlib, brotli and zstd, in libcurl's own order.
        #expect(codings == "deflate, gzip, br, zstd")
        let fixture = try await SessionFixture.make()
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/redirect/1")))
        #expect(fixture.server.requests.count == 2)
        for recorded in fixture.server.requests {
            #expect(recorded.headers.filter { $0.name.lowercased() == "accept-encoding" }.map(\.value) == [codings])
        }
        try await fixture.tearDown()
    }

    @Test("a gzip body is decoded before the data task sees it")
    func gzipDecoded() async throws {
        let fixture = try await SessionFixture.make()
        let (data, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/gzip")))
        #expect(response.statusCode == 200)
        #expect(response.headers["Content-Encoding"] == "gzip")
        #expect(String(decoding: data, as: UTF8.self) == TestServer.gzipDecodedText)
        try await fixture.tearDown()
    }

    @Test("a streamed body asks for no coding and comes as the server sent it, so its bound holds")
    func streamNotDecoded() async throws {
        let fixture = try await SessionFixture.make()
        let (response, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/gzip")))
        var received: [UInt8] = []
        for try await chunk in body { received += chunk }
        #expect(response.headers["Content-Encoding"] == "gzip")
        #expect(received == TestServer.gzipBody)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headerValue("Accept-Encoding") == nil)
        try await fixture.tearDown()
    }

    @Test("a caller's own Accept-Encoding is sent alone, as it is, and decoding still applies")
    func callersAcceptEncodingWins() async throws {
        let fixture = try await SessionFixture.make()
        let request = Request(url: fixture.server.url("/gzip"), headers: ["Accept-Encoding": "gzip"])
        let (data, _) = try await fixture.session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == TestServer.gzipDecodedText)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headers.filter { $0.name.lowercased() == "accept-encoding" }.map(\.value) == ["gzip"])
        try await fixture.tearDown()
    }

    @Test("a download to a file asks for no coding and keeps the bytes as the server sent them")
    func downloadKeepsEncodedBytes() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("body.gz")
        let (fileURL, response) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/gzip")), to: destination)
        #expect(response.statusCode == 200)
        #expect([UInt8](try Data(contentsOf: fileURL)) == TestServer.gzipBody)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headerValue("Accept-Encoding") == nil)
        try await fixture.tearDown()
    }

    @Test(
        "a body in a coding libcurl can't decode comes as sent (before libcurl 8.5; from it, decoding), and the handle decodes again after",
        arguments: ["x-unknown", "gzip, x-unknown", "X-Unknown, identity"])
    func unknownCodingPassedThrough(coding: String) async throws {
        let fixture = try await SessionFixture.make()
        var components = URLComponents(url: fixture.server.url("/headers"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "Content-Encoding", value: coding)]
        let url = try #require(components?.url)
        if CurlFeatures.passesUndecodableBodies {
            let (data, response) = try await fixture.session.data(for: Request(url: url))
            #expect(response.statusCode == 200)
            #expect(response.headers["Content-Encoding"] == coding)
            #expect(!response.bodyIsDecodedInMemory)
            // The route's body is the JSON of its fields, not encoded at all: it arrives byte for byte.
            let fields = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(fields["Content-Encoding"] as? String == coding)
        } else {
            // libcurl 8.5 and later set up their decoders as they parse the field, before Herald sees it.
            await #expect {
                _ = try await fixture.session.data(for: Request(url: url))
            } throws: { ($0 as? HeraldError)?.code == .decoding }
        }
        // The next request on the same session (and pooled handle) decodes gzip again.
        let (decoded, gzipResponse) = try await fixture.session.data(for: Request(url: fixture.server.url("/gzip")))
        #expect(String(decoding: decoded, as: UTF8.self) == TestServer.gzipDecodedText)
        #expect(gzipResponse.bodyIsDecodedInMemory)
        try await fixture.tearDown()
    }

    @Test("every coding libcurl names is decodable, with its aliases, in any case; any other is not")
    func decodableCodings() {
        #expect(CurlFeatures.decodesEvery(contentCoding: []))
        #expect(
            CurlFeatures.decodesEvery(contentCoding: ["gzip", "GZIP, br", "x-gzip", "identity", "zstd, deflate", " , "])
        )
        #expect(!CurlFeatures.decodesEvery(contentCoding: ["gzip", "compress"]))
        #expect(!CurlFeatures.decodesEvery(contentCoding: ["gzip, x-unknown"]))
    }

    @Test("bodyIsDecodedInMemory: a coding other than identity, every one decodable")
    func bodyIsDecodedInMemory() throws {
        let url = try #require(URL(string: "http://127.0.0.1/"))
        func response(_ codings: [String]) -> HTTPResponse {
            var headers = HTTPHeaders()
            for coding in codings { headers.add(name: "Content-Encoding", value: coding) }
            return HTTPResponse(url: url, statusCode: 200, headers: headers)
        }
        #expect(!response([]).bodyIsDecodedInMemory)
        #expect(!response(["identity"]).bodyIsDecodedInMemory)
        #expect(!response([" , "]).bodyIsDecodedInMemory)
        #expect(response(["GZIP"]).bodyIsDecodedInMemory)
        #expect(response(["gzip", "br"]).bodyIsDecodedInMemory)
        #expect(!response(["gzip", "compress"]).bodyIsDecodedInMemory)
    }
}
