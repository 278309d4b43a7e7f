import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Cookies on the wire, against the loopback server: stored from every hop's response, sent on every hop.
@Suite("Cookies on every hop")
struct CookieFlowTests {
    private static func echoedCookie(_ data: Data) throws -> String? {
        try JSONDecoder().decode(EchoedRequest.self, from: data).headers["cookie"]
    }

    @Test("login flow: POST /login answers 302 with Set-Cookie, and the redirected GET /account sends the cookie")
    func loginFlow() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/login"), method: "POST", body: Data("user=ann".utf8)),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        #expect((call.object as? JSONValue)?["cookie"] == "session=s3cr3t")
        let account = try #require(fixture.server.requests(forPath: "/account").first)
        #expect(account.method == "GET")
        #expect(account.headerValue("Cookie") == "session=s3cr3t")
        #expect(fixture.server.requests(forPath: "/login").first?.headerValue("Cookie") == nil)
        let stored = try #require(fixture.session.cookieStore.allCookies.first)
        #expect(stored.name == "session" && stored.isHTTPOnly && stored.domain == "127.0.0.1" && stored.isHostOnly)

        // Later requests to the same server carry it too.
        let (data, _) = try await fixture.session.data(for: Request(url: fixture.server.url("/echo")))
        #expect(try Self.echoedCookie(data) == "session=s3cr3t")
        try await fixture.tearDown()
    }

    @Test(
        "a URL libcurl rewrites (another IPv4 form, dot segments) gets back the cookies its responses set",
        arguments: ["127.000.000.001", "127.1", "0x7f.0.0.1"])
    func rewrittenURL(host: String) async throws {
        let fixture = try await SessionFixture.make()
        let url = try #require(URL(string: "http://\(host):\(fixture.server.port)/x/../login"))
        let log = CompletionLog()
        try fixture.session.dataTask(
            with: Request(url: url, method: "POST", body: Data("user=ann".utf8)), completionHandler: log.handler
        ).resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.response?.statusCode == 200, "\(String(describing: log.all.first?.error))")
        let account = try #require(fixture.server.requests(forPath: "/account").first)
        #expect(account.headerValue("Cookie") == "session=s3cr3t")
        // Stored for the host and path the request really went to.
        let stored = try #require(fixture.session.cookieStore.allCookies.first)
        #expect(stored.domain == "127.0.0.1" && stored.path == "/")
        #expect(fixture.session.cookieStore.cookieHeader(for: url) == "session=s3cr3t")
        try await fixture.tearDown()
    }

    @Test("a response's cookies are stored when its head arrives, not when its body ends: a long body holds none back")
    func cookiesTakenAtHead() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let url = fixture.server.url("/headers?Set-Cookie=early%3D1")
        let seenAtHead = Locked<String?>(nil)
        // Asked once the head is in, before any of the body: what the store holds then.
        fixture.session.dataTaskDidReceiveResponse = { [store = fixture.session.cookieStore] _, _ in
            seenAtHead.withLock { $0 = store.cookieHeader(for: url) ?? "none" }
            // The caller removes it while the body still comes.
            store.removeAll()
            return .allow
        }
        _ = try await fixture.session.data(for: Request(url: url))
        // Before, the cookie was taken only when the transfer ended.
        #expect(seenAtHead.withLock { $0 } == "early=1")
        // Taken once: removed by the caller after the head, it stays removed when the transfer ends.
        #expect(fixture.session.cookieStore.allCookies.isEmpty)
        try await fixture.tearDown()
    }

    @Test("a redirect back to a URL already requested, now with the cookie a hop set, is followed: a login")
    func redirectBackAfterLogin() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // /account?login=1 without the cookie → /login, which sets it → /account?login=1 again, with it.
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/account?login=1")))
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode([String: String].self, from: data)["cookie"] == "session=s3cr3t")
        let accounts = fixture.server.requests(forPath: "/account")
        #expect(accounts.map { $0.headerValue("Cookie") } == [nil, "session=s3cr3t"])
        #expect(fixture.server.requests(forPath: "/login").count == 1)
        try await fixture.tearDown()
    }

    @Test("the same redirect without a cookie store is a loop: the request would go again unchanged")
    func redirectBackWithoutCookiesIsALoop() async throws {
        var configuration = SessionConfiguration.default
        configuration.httpShouldSetCookies = false
        let fixture = try await SessionFixture.make(configuration: configuration)
        let error = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.data(for: Request(url: fixture.server.url("/account?login=1")))
        }
        #expect(error?.code == .redirectLoop)
        #expect(fixture.server.requests(forPath: "/account").count == 1)
        try await fixture.tearDown()
    }

    @Test("the cookie goes with an authentication round-trip after the redirect too")
    func authenticationHop() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "ann", password: "pw"), forHost: "127.0.0.1", port: fixture.server.port)
        let target = "/auth/basic?user=ann&password=pw".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/login?redirect=\(target)")))
        #expect(response.statusCode == 200)
        let hops = fixture.server.requests(forPath: "/auth/basic")
        #expect(hops.count == 2)  // the 401, then the request with the credential
        #expect(hops.map { $0.headerValue("Cookie") } == ["session=s3cr3t", "session=s3cr3t"])
        try await fixture.tearDown()
    }

    @Test("a Secure cookie is never sent over http, nor accepted from an http response")
    func secureNotOverHTTP() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let store = fixture.session.cookieStore
        store.setCookie(Cookie(name: "plain", value: "1", domain: "127.0.0.1"))
        store.setCookie(Cookie(name: "secret", value: "2", domain: "127.0.0.1", isSecure: true))
        let (data, _) = try await fixture.session.data(for: Request(url: fixture.server.url("/echo")))
        #expect(try Self.echoedCookie(data) == "plain=1")
        // Over https the same store would send it (the matching rule, without traffic).
        #expect(store.cookieHeader(for: URL(string: "https://127.0.0.1/echo")!) == "plain=1; secret=2")

        let spoof = "token=x; Secure".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/login?cookie=\(spoof)")))
        #expect(!store.allCookies.contains { $0.name == "token" })
        #expect(fixture.server.requests(forPath: "/account").first?.headerValue("Cookie")?.contains("token") == false)
        try await fixture.tearDown()
    }

    @Test("a request's own Cookie field wins; httpShouldSetCookies = false neither stores nor sends")
    func callerHeaderAndOptOut() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.cookieStore.setCookie(Cookie(name: "stored", value: "1", domain: "127.0.0.1"))
        let (data, _) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/echo"), headers: ["Cookie": "mine=2"]))
        #expect(try Self.echoedCookie(data) == "mine=2")
        try await fixture.tearDown()

        var configuration = SessionConfiguration()
        configuration.httpShouldSetCookies = false
        let off = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        _ = try await off.session.data(for: Request(url: off.server.url("/login")))
        #expect(off.session.cookieStore.allCookies.isEmpty)
        #expect(off.server.requests(forPath: "/account").first?.headerValue("Cookie") == nil)
        try await off.tearDown()
    }

    @Test("sessions given the same store share cookies")
    func sharedStore() async throws {
        let store = CookieStore()
        var configuration = SessionConfiguration()
        configuration.httpCookieStore = store
        let first = try await SessionFixture.make(configuration: configuration)
        _ = try await first.session.data(for: Request(url: first.server.url("/login")))
        let second = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        #expect(second.cookieStore === store)
        let (data, _) = try await second.data(for: Request(url: first.server.url("/echo")))
        #expect(try Self.echoedCookie(data) == "session=s3cr3t")
        second.invalidate(cancelingTasks: true)
        try await first.tearDown()
    }
}
