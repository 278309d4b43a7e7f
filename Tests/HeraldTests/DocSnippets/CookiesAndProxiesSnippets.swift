import Foundation
import Herald
import HeraldTesting
import Testing

/// The snippets of the DocC article "Cookies and proxies": a persistent cookie store used for a login on
/// the loopback server, and a proxy configuration (built, never used: the host is not on this machine).
@Suite("CookiesAndProxies.md snippets")
struct CookiesAndProxiesSnippets {
    @Test("a persistent cookie store keeps the login's cookie in its file")
    func persistentStore() async throws {
        let server = try await TestServer.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-doc-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // doc-line: let cookieFile = URL(fileURLWithPath: "/var/lib/myapp/cookies.jsonl")
        let cookieFile = directory.appendingPathComponent("cookies.jsonl")
        var configuration = SessionConfiguration()
        configuration.httpCookieStore = try CookieStore(persistingTo: cookieFile)
        let session = SessionManager(configuration: configuration)

        defer { session.invalidate(cancelingTasks: true) }
        let persistent = "remember=1; Max-Age=3600".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (_, response) = try await session.data(for: Request(url: server.url("/login?cookie=\(persistent)")))
        #expect(response.statusCode == 200)
        session.cookieStore.flush()
        let saved = try String(contentsOf: cookieFile, encoding: .utf8)
        #expect(saved.contains(#""name":"remember""#))
        #expect(!saved.contains(#""name":"session""#))  // a session cookie is never written
        try await server.shutdown()
    }

    @Test("an explicit proxy configuration is accepted by the task factories")
    func proxyConfiguration() throws {
        var proxied = SessionConfiguration()
        proxied.proxy = Proxy(
            kind: .http, host: "proxy.internal.example", port: 3128,
            credential: Credential(user: "build", password: "s3cret"),
            excludedHosts: ["localhost", "10.0.0.0/8"])
        let proxiedSession = SessionManager(configuration: proxied)

        defer { proxiedSession.invalidate(cancelingTasks: true) }
        // Created, never resumed: nothing is sent.
        let task = try proxiedSession.dataTask(with: Request(url: URL(string: "http://127.0.0.1:9/")!))
        #expect(task.state == .suspended)
        task.cancel()
    }
}
