import Foundation
import Herald
import HeraldTesting
import Testing

/// herald-cache-proxy, the proxy the public HTTP caching suite tests Herald's cache through, as that suite's
/// client and server see it: it forwards the method as sent, drops the fields of one connection both ways, and
/// frames a HEAD answer as the GET's.
@Suite("herald-cache-proxy")
struct CacheProxyTests {
    /// A proxy in front of a new test server, its port, and a client session.
    private struct Proxied {
        let server: TestServer
        let proxy: DiskResponseCacheProcessTests.Child
        let port: Int
        let client: SessionManager

        static func start() async throws -> Proxied {
            let executable = try DiskResponseCacheProcessTests.proxyExecutable()
            let server = try await TestServer.start()
            let upstream = String(server.url("/").absoluteString.dropLast())
            let proxy = try DiskResponseCacheProcessTests.Child(executable, ["--upstream", upstream], readyText: "\n")
            try await proxy.waitUntilReady()
            let port = try #require(proxy.text.split(separator: "\n").first.flatMap { Int($0) }, "\(proxy.text)")
            return Proxied(server: server, proxy: proxy, port: port, client: SessionManager())
        }

        func url(_ path: String) throws -> URL {
            try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
        }

        func stop() async throws {
            await client.invalidateAndWait(cancelingTasks: true)
            try await proxy.killAndWait()
            try await server.shutdown()
        }
    }

    @Test("M-SEARCH goes upstream as M-SEARCH, not as NIO's MSEARCH, which servers refuse")
    func methodWithHyphen() async throws {
        let proxied = try await Proxied.start()
        let (_, response) = try await proxied.client.data(
            for: Request(url: try proxied.url("/echo"), method: "M-SEARCH", body: Data("query".utf8)))
        #expect(response.statusCode == 200)
        #expect(proxied.server.requests(forPath: "/echo").count == 1)
        try await proxied.stop()
    }

    @Test("the fields a client's Connection field names are of that connection: not forwarded upstream")
    func connectionFieldsStay() async throws {
        let proxied = try await Proxied.start()
        let (data, _) = try await proxied.client.data(
            for: Request(url: try proxied.url("/echo"), headers: ["Connection": "X-Hop", "X-Hop": "1", "X-End": "2"]))
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
        #expect(echoed.headers["x-hop"] == nil)
        #expect(echoed.headers["x-end"] == "2")
        try await proxied.stop()
    }

    @Test("a HEAD answer carries the GET's Content-Length, not chunked framing")
    func headKeepsItsLength() async throws {
        let proxied = try await Proxied.start()
        let (body, get) = try await proxied.client.data(for: Request(url: try proxied.url("/text")))
        let (_, head) = try await proxied.client.data(for: Request(url: try proxied.url("/text"), method: "HEAD"))
        #expect(head.statusCode == 200)
        #expect(head.headers["Content-Length"] == String(body.count))
        #expect(get.headers["Content-Length"] == String(body.count))
        #expect(head.headers["Transfer-Encoding"] == nil)
        try await proxied.stop()
    }
}
