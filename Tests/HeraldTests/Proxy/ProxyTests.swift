import Foundation
import Herald
import HeraldTesting
import Testing

/// An explicit proxy, against a real one: Debian's tinyproxy, started on a loopback port by each test.
@Suite("Proxies", .timeLimit(.minutes(2)))
struct ProxyTests {
    private static func session(through proxy: Proxy) -> SessionManager {
        var configuration = SessionConfiguration()
        configuration.proxy = proxy
        return SessionManager(configuration: configuration)
    }

    @Test("a request goes through the HTTP proxy, loopback included: the proxy's log shows it")
    func throughHTTPProxy() async throws {
        let server = try await TestServer.start()
        try await withTinyproxy { tinyproxy in
            let session = Self.session(through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port))
            defer { session.invalidate(cancelingTasks: true) }
            let url = server.url("/echo?via=proxy")
            let (data, response) = try await session.data(for: Request(url: url))
            #expect(response.statusCode == 200)
            try await tinyproxy.waitForLog(containing: "GET \(url.absoluteString) HTTP/1.1")
            // The server saw the request come through tinyproxy, which adds its Via field.
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echoed.headers["via"]?.contains("tinyproxy") == true)
        }
        try await server.shutdown()
    }

    @Test("a proxy demanding a credential: answered 407 without it, passed with it")
    func proxyCredential() async throws {
        let server = try await TestServer.start()
        let credential = Credential(user: "proxyuser", password: "proxypass")
        try await withTinyproxy(credential: credential) { tinyproxy in
            let refused = Self.session(through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port))
            defer { refused.invalidate(cancelingTasks: true) }
            refused.responseSerializer = DataResponseSerializer()
            let (_, denied) = try await refused.data(for: Request(url: server.url("/json")))
            #expect(denied.statusCode == 407)
            #expect(server.requests(forPath: "/json").isEmpty)

            let allowed = Self.session(
                through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port, credential: credential))
            defer { allowed.invalidate(cancelingTasks: true) }
            let (_, response) = try await allowed.data(for: Request(url: server.url("/json")))
            #expect(response.statusCode == 200)
            #expect(server.requests(forPath: "/json").count == 1)
            // The credential went to the proxy, not to the server.
            #expect(server.requests(forPath: "/json").first?.headerValue("Proxy-Authorization") == nil)
        }
        try await server.shutdown()
    }

    @Test("an https request whose tunnel the proxy refuses with 407 fails with authentication and the status")
    func tunnelRefused() async throws {
        let server = try await TestServer.start()
        try await withTinyproxy(credential: Credential(user: "proxyuser", password: "proxypass")) { tinyproxy in
            let session = Self.session(through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port))
            defer { session.invalidate(cancelingTasks: true) }
            // Refused at the CONNECT: nothing reaches the (loopback) server, which speaks no TLS anyway.
            let url = try #require(URL(string: "https://127.0.0.1:\(server.port)/json"))
            let error = try #require(
                await #expect(throws: HeraldError.self) { try await session.data(for: Request(url: url)) })
            #expect(error.code == .authentication, "\(error)")
            #expect(error.statusCode == 407)
            #expect(server.requests(forPath: "/json").isEmpty)
            // Not a lost connection, so the default retry policy doesn't send a refused credential again.
            #expect(!RetryPolicy.defaultRetryableErrorCodes.contains(error.code))
        }
        try await server.shutdown()
    }

    @Test("an HTTPS proxy that doesn't speak TLS fails the task with proxy, not as the server's TLS")
    func httpsProxyWithoutTLS() async throws {
        let server = try await TestServer.start()
        // The test server as the proxy: it speaks plain HTTP, and answers a TLS handshake with an HTTP error.
        let session = Self.session(through: Proxy(kind: .https, host: "127.0.0.1", port: server.port))
        defer { session.invalidate(cancelingTasks: true) }
        let error = await #expect(throws: HeraldError.self) {
            _ = try await session.data(for: Request(url: server.url("/echo"), timeoutInterval: 20))
        }
        #expect(error?.code == .proxy, "\(String(describing: error))")
        #expect(error?.message.contains("HTTPS proxy") == true)
        try await server.shutdown()
    }

    @Test("a host written as a shorthand IPv4 address (127.1) is matched by an excluded range, and reached directly")
    func shorthandHostGoesDirect() async throws {
        let server = try await TestServer.start()
        try await withTinyproxy { tinyproxy in
            let session = Self.session(
                through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port, excludedHosts: ["127.0.0.0/8"]))
            defer { session.invalidate(cancelingTasks: true) }
            let url = try #require(URL(string: "http://127.1:\(server.port)/echo?via=shorthand"))
            let (data, _) = try await session.data(for: Request(url: url))
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echoed.headers["via"] == nil)
            #expect(!tinyproxy.output.contains("via=shorthand"))
        }
        try await server.shutdown()
    }

    @Test("hosts in the no-proxy list are reached directly")
    func excludedHostsGoDirect() async throws {
        let server = try await TestServer.start()
        try await withTinyproxy { tinyproxy in
            let session = Self.session(
                through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port, excludedHosts: ["127.0.0.1"]))
            defer { session.invalidate(cancelingTasks: true) }
            let (data, _) = try await session.data(for: Request(url: server.url("/echo?via=direct")))
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echoed.headers["via"] == nil)
            #expect(!tinyproxy.output.contains("/echo?via=direct"))
        }
        try await server.shutdown()
    }

    @Test(
        "excluded ranges, a * among other entries, and a leading-dot name are decided by Herald, whatever libcurl's version",
        arguments: [
            (["127.0.0.0/8"], true), (["example.test", "*"], true), (["::1", "127.0.0.0/30"], true),
            ([".example.test", "10.0.0.0/8"], false), (["127.0.0.2/32"], false),
        ])
    func excludedRanges(entries: [String], direct: Bool) async throws {
        let server = try await TestServer.start()
        try await withTinyproxy { tinyproxy in
            let session = Self.session(
                through: Proxy(kind: .http, host: "127.0.0.1", port: tinyproxy.port, excludedHosts: entries))
            defer { session.invalidate(cancelingTasks: true) }
            let marker = "/echo?entries=\(entries.count)-\(direct)"
            let (data, _) = try await session.data(for: Request(url: server.url(marker)))
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            // tinyproxy adds a Via field to what it forwards.
            #expect((echoed.headers["via"] == nil) == direct, "\(entries): \(echoed.headers)")
        }
        try await server.shutdown()
    }

    @Test("a request goes through a SOCKS5 proxy, locally and remotely resolved: the proxy's log shows it")
    func throughSOCKS5Proxy() async throws {
        let server = try await TestServer.start()
        try await withDante { dante in
            for kind in [Proxy.Kind.socks5, .socks5Hostname] {
                let session = Self.session(through: Proxy(kind: kind, host: "127.0.0.1", port: dante.port))
                defer { session.invalidate(cancelingTasks: true) }
                let (_, response) = try await session.data(for: Request(url: server.url("/json?kind=\(kind)")))
                #expect(response.statusCode == 200)
            }
            // danted logs each connection it made for a client: to the test server's port, twice.
            try await dante.waitForLog(containing: "127.0.0.1.\(server.port)")
            let connections = dante.output.split(separator: "\n").filter {
                $0.contains("tcp/connect") && $0.contains("127.0.0.1.\(server.port)")
            }
            #expect(connections.count >= 2, "\(dante.output)")
            #expect(server.requests(forPath: "/json").count == 2)
        }
        try await server.shutdown()
    }

    @Test("a malformed proxy is refused by the factories with a typed error, before any byte is sent")
    func invalidProxy() throws {
        let url = URL(string: "http://127.0.0.1:9/")!
        for proxy in [
            Proxy(kind: .http, host: "", port: 8080),
            Proxy(kind: .socks5, host: "127.0.0.1", port: 0),
            Proxy(kind: .http, host: "user@127.0.0.1", port: 8080),
            Proxy(kind: .http, host: "127.0.0.1", port: 8080, excludedHosts: ["a, b"]),
            Proxy(kind: .https, host: "127.0.0.1", port: 8080, credential: Credential(user: "u\r\n", password: "p")),
            // A port written into the host, and a bracketed address: curl was given `http://[127.0.0.1:8080]:3128`
            // and `http://[[::1]]:3128`, and every request failed as if the proxy were down.
            Proxy(kind: .http, host: "127.0.0.1:8080", port: 3128),
            Proxy(kind: .http, host: "[::1]", port: 3128),
        ] {
            let session = Self.session(through: proxy)
            let error = #expect(throws: HeraldError.self) { try session.dataTask(with: Request(url: url)) }
            #expect(error?.code == .invalidRequest, "\(proxy)")
            session.invalidate(cancelingTasks: true)
        }
    }

    @Test("an IPv6 proxy address is given bare, with or without a zone")
    func ipv6ProxyHosts() throws {
        try Proxy(kind: .http, host: "::1", port: 3128).validate()
        try Proxy(kind: .socks5, host: "::1%lo", port: 1080).validate()
        try Proxy(kind: .http, host: "127.0.0.1", port: 3128).validate()
    }

    @Test("the proxy URL curl is given, for each kind")
    func proxyDescriptions() {
        #expect(Proxy(kind: .http, host: "proxy.example", port: 3128).description == "http://proxy.example:3128")
        #expect(Proxy(kind: .https, host: "proxy.example", port: 443).description == "https://proxy.example:443")
        #expect(Proxy(kind: .socks5, host: "127.0.0.1", port: 1080).description == "socks5://127.0.0.1:1080")
        #expect(Proxy(kind: .socks5Hostname, host: "::1", port: 1080).description == "socks5h://[::1]:1080")
        let secret = Proxy(kind: .http, host: "p", port: 1, credential: Credential(user: "u", password: "hunter2"))
        #expect(!secret.description.contains("hunter2"))
    }
}
