import Foundation
@testable import Herald
import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

/// HTTP Basic and Digest challenges: the hooks, the credential store, refused credentials, and the 401
/// delivered promptly when there is no credential.
@Suite("Authentication")
struct AuthenticationTests {
    private struct Authenticated: Decodable {
        var authenticated: Bool
        var user: String
    }

    @Test("Basic with a credential from the session's store: the request is sent again and succeeds")
    func basicFromStore() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "alice", password: "s3cret"), forHost: "127.0.0.1", port: fixture.server.port)
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=alice&password=s3cret")))
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode(Authenticated.self, from: data).user == "alice")
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200])
        try await fixture.tearDown()
    }

    @Test("a credential stored for a host and port answers over the URL scheme it is for: 443 is https, 80 http")
    func hostCredentialKeepsToItsScheme() throws {
        let store = CredentialStore()
        let credential = Credential(user: "alice", password: "s3cret")
        func space(_ scheme: String, _ port: Int) -> ProtectionSpace {
            ProtectionSpace(urlScheme: scheme, host: "H.example", port: port, authenticationScheme: .basic, realm: "r")
        }
        store.setCredential(credential, forHost: "h.example", port: 443)
        // A redirect to http://h.example:443/ can't have it answer a cleartext Basic challenge.
        #expect(store.credential(for: space("https", 443)) == credential)
        #expect(store.credential(for: space("http", 443)) == nil)
        store.setCredential(credential, forHost: "h.example", port: 80)
        #expect(store.credential(for: space("http", 80)) == credential)
        #expect(store.credential(for: space("https", 80)) == nil)
        // Another port: either scheme, unless one is named.
        store.setCredential(credential, forHost: "h.example", port: 8080)
        #expect(store.credential(for: space("http", 8080)) == credential)
        #expect(store.credential(for: space("https", 8080)) == credential)
        store.setCredential(credential, forHost: "h.example", port: 8443, urlScheme: "HTTPS")
        #expect(store.credential(for: space("https", 8443)) == credential)
        #expect(store.credential(for: space("http", 8443)) == nil)
        // Removed for the scheme it was stored for.
        store.setCredential(nil, forHost: "h.example", port: 443)
        #expect(store.credential(for: space("https", 443)) == nil)
        // Removed without naming a scheme: whatever the host and port had, over any scheme. Before, the one
        // stored for https stayed and went on answering.
        store.setCredential(nil, forHost: "H.example", port: 8443)
        #expect(store.credential(for: space("https", 8443)) == nil)
        // Named, only that scheme's goes.
        store.setCredential(credential, forHost: "h.example", port: 8443, urlScheme: "https")
        store.setCredential(nil, forHost: "h.example", port: 8443, urlScheme: "http")
        #expect(store.credential(for: space("https", 8443)) == credential)
        // Named, one stored for any scheme goes too: before, it went on answering over the scheme named.
        store.setCredential(nil, forHost: "h.example", port: 8443)
        store.setCredential(credential, forHost: "h.example", port: 8443)
        store.setCredential(nil, forHost: "h.example", port: 8443, urlScheme: "https")
        #expect(store.credential(for: space("https", 8443)) == nil)
    }

    @Test("removing a host's credentials removes those stored for its protection spaces too")
    func hostRemovalCoversSpaces() {
        let store = CredentialStore()
        let credential = Credential(user: "alice", password: "s3cret")
        func space(_ scheme: String, _ host: String, _ port: Int) -> ProtectionSpace {
            ProtectionSpace(urlScheme: scheme, host: host, port: port, authenticationScheme: .basic, realm: "r")
        }
        for stored in [
            space("https", "API.example", 443), space("http", "api.example", 443), space("https", "other.example", 443),
        ] {
            store.setCredential(credential, for: stored)
        }
        // Named, only that scheme's spaces go.
        store.setCredential(nil, forHost: "api.example", port: 443, urlScheme: "http")
        #expect(store.credential(for: space("http", "api.example", 443)) == nil)
        #expect(store.credential(for: space("https", "API.example", 443)) == credential)
        // Before, a logout by host left the space's credential answering the next 401.
        store.setCredential(nil, forHost: "api.example", port: 443)
        #expect(store.credential(for: space("https", "API.example", 443)) == nil)
        #expect(store.credential(for: space("https", "other.example", 443)) == credential)
    }

    @Test("offered Digest and Basic, with a credential stored for the Basic space only: Basic answers")
    func storedCredentialPicksItsSpace() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "alice", password: "s3cret"),
            for: ProtectionSpace(
                urlScheme: "http", host: "127.0.0.1", port: fixture.server.port, authenticationScheme: .basic,
                realm: "herald"))
        let digest = #"Digest realm="elsewhere", nonce="n", qop="auth""#
        let offer = digest.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=alice&password=s3cret&alsoOffer=\(offer)")))
        // Before, the Digest space was chosen, the store had nothing for it, and the task ended with the 401.
        #expect(response.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200])
        try await fixture.tearDown()
    }

    @Test("a page that sends a visitor to a login whose challenge is answered, and back: the page, not a loop")
    func backFromLogin() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "alice", password: "s3cret"), forHost: "127.0.0.1", port: fixture.server.port)
        // The page sends a visitor without the credential to the login page; answered, the login sends them back.
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=alice&password=s3cret&login=1")))
        // Before, the way back to the page was taken for a loop: the same request, as far as the key knew.
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode(Authenticated.self, from: data).user == "alice")
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [302, 401, 302, 200])
        try await fixture.tearDown()
    }

    @Test("Basic through the task hook, which sees the parsed challenge")
    func basicFromHook() async throws {
        let fixture = try await SessionFixture.make()
        let challenges = Locked<[AuthenticationChallenge]>([])
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, challenge in
            challenges.withLock { $0.append(challenge) }
            return .useCredential(Credential(user: "bob", password: "pw"))
        }
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=bob&password=pw")))
        #expect(response.statusCode == 200)
        let challenge = try #require(challenges.withLock { $0 }.first)
        #expect(challenges.withLock { $0.count } == 1)
        #expect(challenge.protectionSpace.authenticationScheme == .basic)
        #expect(challenge.protectionSpace.realm == "herald")
        #expect(challenge.protectionSpace.host == "127.0.0.1")
        #expect(challenge.protectionSpace.port == fixture.server.port)
        #expect(challenge.previousFailureCount == 0)
        #expect(challenge.failureResponse.statusCode == 401)
        #expect(challenge.proposedCredential == nil)
        try await fixture.tearDown()
    }

    @Test("Digest (RFC 7616, MD5) through the session hook, verified by the server")
    func digestFromSessionHook() async throws {
        let fixture = try await SessionFixture.make()
        let schemes = Locked<[AuthenticationScheme]>([])
        fixture.session.sessionDidReceiveAuthenticationChallenge = { _, challenge in
            schemes.withLock { $0.append(challenge.protectionSpace.authenticationScheme) }
            #expect(challenge.protectionSpace.realm == "herald-digest")
            return .useCredential(Credential(user: "carol", password: "digest-pw"))
        }
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/digest?user=carol&password=digest-pw")))
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode(Authenticated.self, from: data).user == "carol")
        #expect(schemes.withLock { $0 } == [.digest])
        let authorization = try #require(
            fixture.server.requests(forPath: "/auth/digest").last?.headerValue("Authorization"))
        #expect(authorization.hasPrefix("Digest "))
        #expect(authorization.contains("response=\""))  // curl computed the digest answer
        try await fixture.tearDown()
    }

    @Test("a cookie set on the 401 libcurl answers for Digest is stored: the next request carries it")
    func digestInterimCookie() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.sessionDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "carol", password: "digest-pw"))
        }
        // Each 401 sets `dsid` to its nonce. Herald's first request gets one; its answer is a transfer of its
        // own, whose first request libcurl sends without `Authorization`, gets another 401 (a fresh nonce and
        // cookie), and answers that one.
        let url = fixture.server.url("/auth/digest?user=carol&password=digest-pw&cookie=dsid")
        let (data, response) = try await fixture.session.data(for: Request(url: url))
        #expect(response.statusCode == 200)
        struct Answer: Decodable { var nonce: String }
        let answered = try JSONDecoder().decode(Answer.self, from: data).nonce
        #expect(fixture.server.requests(forPath: "/auth/digest").count == 3)
        // Before, the interim 401's cookie was dropped with its head: the store kept the first 401's.
        let stored = fixture.session.cookieStore.cookies(for: url).first { $0.name == "dsid" }?.value
        #expect(stored == answered)
        try await fixture.tearDown()
    }

    @Test("a refused credential asks again with previousFailureCount 1; default handling then delivers the 401")
    func wrongPassword() async throws {
        let fixture = try await SessionFixture.make()
        let counts = Locked<[Int]>([])
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, challenge in
            counts.withLock { $0.append(challenge.previousFailureCount) }
            return challenge.previousFailureCount == 0
                ? .useCredential(Credential(user: "dave", password: "wrong")) : .performDefaultHandling
        }
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=dave&password=right")))
        #expect(response.statusCode == 401)
        #expect(counts.withLock { $0 } == [0, 1])
        #expect(fixture.server.requests(forPath: "/auth/basic").count == 2)
        try await fixture.tearDown()
    }

    @Test("a 401 without any credential completes promptly with the 401 (corelibs hangs: #5456)")
    func noCredential() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/digest?user=x&password=y")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let call = try #require(log.all.first)
        #expect(call.response?.statusCode == 401)
        #expect(call.error?.code == .unacceptableStatusCode)
        #expect(fixture.server.requests(forPath: "/auth/digest").count == 1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("cancelAuthenticationChallenge completes the task with cancelled; the task hook overrides the session hook")
    func cancelDisposition() async throws {
        let fixture = try await SessionFixture.make()
        let sessionCalls = Locked(0)
        fixture.session.sessionDidReceiveAuthenticationChallenge = { _, _ in
            sessionCalls.withLock { $0 += 1 }
            return .useCredential(Credential(user: "u", password: "p"))
        }
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .cancelAuthenticationChallenge }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=u&password=p")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        #expect(sessionCalls.withLock { $0 } == 0)
        #expect(fixture.server.requests(forPath: "/auth/basic").count == 1)
        try await fixture.tearDown()
    }

    @Test("a POST body is sent again with the credential")
    func bodyResent() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "erin", password: "pw"), forHost: "127.0.0.1", port: fixture.server.port)
        let (_, response) = try await fixture.session.data(
            for: Request(
                url: fixture.server.url("/auth/basic?user=erin&password=pw"), method: "POST", body: Data("payload".utf8)
            ))
        #expect(response.statusCode == 200)
        let requests = fixture.server.requests(forPath: "/auth/basic")
        #expect(requests.map(\.method) == ["POST", "POST"])
        #expect(requests.last?.bodyByteCount == 7)
        try await fixture.tearDown()
    }

    @Test("a credential follows a same-origin redirect and is never sent to another origin")
    func credentialStaysWithItsOrigin() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "u", password: "p"))
        }
        func target(_ redirect: String) -> Request {
            let encoded = redirect.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? redirect
            return Request(url: fixture.server.url("/auth/basic?user=u&password=p&redirect=\(encoded)"))
        }
        let (_, crossed) = try await fixture.session.data(for: target(other.url("/echo").absoluteString))
        #expect(crossed.statusCode == 200)
        let received = try #require(other.requests(forPath: "/echo").first)
        #expect(received.headerValue("Authorization") == nil)

        let (data, same) = try await fixture.session.data(for: target("/echo"))
        #expect(same.statusCode == 200)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
        #expect(echoed.headers["authorization"] == "Basic " + Data("u:p".utf8).base64EncodedString())
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("a redirection hook that moves a same-origin redirect to another origin takes no credential there")
    func hookMovingTheRedirectTakesNoCredential() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "u", password: "p"))
        }
        let mirror = other.url("/echo")
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            var moved = proposed
            moved.url = mirror
            return moved
        }
        // The server redirects within its own origin; the hook sends the request to the other server.
        let request = Request(
            url: fixture.server.url("/auth/basic?user=u&password=p&redirect=%2Fecho"),
            headers: ["Authorization": "Bearer caller-token"])
        let (_, response) = try await fixture.session.data(for: request)
        #expect(response.statusCode == 200)
        let received = try #require(other.requests(forPath: "/echo").first)
        #expect(received.headerValue("Authorization") == nil)
        try await other.shutdown()
        try await fixture.tearDown()
    }

    /// Sends a request that gets one 401 with `challenge` (then 200) under `key`, through a retrier that retries a 401:
    /// returns how often the retrier was asked, once the task completed.
    private static func askRetrierAfter401(
        _ fixture: SessionFixture, challenge: String, key: String
    ) async throws -> (asked: Int, task: DataTask) {
        let asked = Locked(0)
        fixture.session.interceptor = Interceptor(retry: { context in
            asked.withLock { $0 += 1 }
            return context.response?.statusCode == 401 ? .retry : .doNotRetry
        })
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=\(key)&status=401&www-authenticate=\(challenge)")))
        task.resume()
        let id = task.taskIdentifier
        _ = try await fixture.recorder.waitUntil { $0.contains { $0.kind == .complete && $0.taskIdentifier == id } }
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(task.response?.statusCode == 200)
        return (asked.withLock { $0 }, task)
    }

    @Test("a 401 with a Bearer challenge goes to the retrier, which can refresh the token and retry")
    func bearerChallengeReachesTheRetrier() async throws {
        let fixture = try await SessionFixture.make()
        let (asked, _) = try await Self.askRetrierAfter401(
            fixture, challenge: "Bearer%20error%3D%22invalid_token%22", key: "bearer")
        #expect(asked == 1)
        try await fixture.tearDown()
    }

    @Test("a 401 whose challenge a hook declines, or leaves to a store without a credential, goes to the retrier")
    func declinedChallengeReachesTheRetrier() async throws {
        let fixture = try await SessionFixture.make()
        // Before, a hook that declined completed the task with the 401: the retrier, which would refresh a token,
        // was never asked, though it is without the hook.
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .rejectProtectionSpace }
        let (rejected, first) = try await Self.askRetrierAfter401(
            fixture, challenge: "Basic%20realm%3D%22api%22", key: "basic-rejected")
        #expect(rejected == 1)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .performDefaultHandling }
        let (defaulted, second) = try await Self.askRetrierAfter401(
            fixture, challenge: "Basic%20realm%3D%22api%22", key: "basic-default")
        #expect(defaulted == 1)
        // Each transfer's metrics once: the 401's hop and the retry's answer.
        for task in [first, second] {
            #expect(task.hopMetrics.count == 2)
        }
        #expect(fixture.server.requests(forPath: "/flaky").count == 4)
        // Declined, with no retrier: the task completes with the 401, its one transfer counted once. Before, its
        // metrics were both the hop's and the final transfer's: two transfers for one request.
        fixture.session.interceptor = nil
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .rejectProtectionSpace }
        let declined = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=basic-alone&status=401&www-authenticate=Basic")))
        declined.resume()
        try await fixture.recorder.waitForCompletions(3)
        #expect(declined.response?.statusCode == 401)
        #expect(declined.hopMetrics.count == 1)
        try await fixture.tearDown()
    }

    @Test(
        "a 401 with a Basic challenge that no hook or stored credential can answer goes to the retrier; with a stored one, not"
    )
    func unanswerableBasicChallengeReachesTheRetrier() async throws {
        let fixture = try await SessionFixture.make()
        // A token API's 401 that also names Basic: before, the task completed with it and the retrier (which
        // refreshes the token) was never asked.
        let (asked, _) = try await Self.askRetrierAfter401(
            fixture, challenge: "Basic%20realm%3D%22api%22", key: "basic-unanswered")
        #expect(asked == 1)
        // With a credential stored for the origin the challenge is answered instead: the retrier sees no 401.
        let retrierCalls = Locked(0)
        fixture.session.interceptor = Interceptor(retry: { _ in
            retrierCalls.withLock { $0 += 1 }
            return .doNotRetry
        })
        let url = fixture.server.url("/auth/basic?user=ada&password=pw")
        let host = try #require(url.host)
        fixture.session.credentialStore.setCredential(
            Credential(user: "ada", password: "pw"), forHost: host, port: try #require(url.port))
        let answered = try fixture.session.dataTask(with: Request(url: url))
        answered.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(answered.response?.statusCode == 200)
        #expect(retrierCalls.withLock { $0 } == 0)
        try await fixture.tearDown()
    }

    @Test("a credential's description redacts the password; challenges parse Digest before Basic")
    func valuesAndParsing() throws {
        let credential = Credential(user: "alice", password: "hunter2")
        #expect(!"\(credential)".contains("hunter2"))
        #expect(!String(reflecting: credential).contains("hunter2"))
        let url = try #require(URL(string: "https://example.com/x"))
        let response = HTTPResponse(
            url: url, statusCode: 401,
            headers: ["WWW-Authenticate": #"Basic realm="a, b", Digest realm="d", qop="auth", nonce="n""#])
        let space = try #require(AuthenticationChallenge.parse(response, url: url))
        #expect(space.authenticationScheme == .digest)
        #expect(space.realm == "d")
        #expect(space.port == 443)
        let basicOnly = HTTPResponse(url: url, statusCode: 401, headers: ["WWW-Authenticate": #"Basic realm="a, b""#])
        #expect(AuthenticationChallenge.parse(basicOnly, url: url)?.realm == "a, b")
        let bearer = HTTPResponse(url: url, statusCode: 401, headers: ["WWW-Authenticate": "Bearer"])
        #expect(AuthenticationChallenge.parse(bearer, url: url) == nil)
        // A Digest challenge libcurl can't answer gives way to Basic; alone, there is nothing to answer.
        for digest in [
            #"Digest realm="d""#, #"Digest realm="d", nonce="n", qop="auth-int""#,
            #"Digest realm="d", nonce="n", algorithm=SHA-1"#,
            // A session variant without a qop, which libcurl refuses to answer: before, Digest was chosen and
            // its 401 read as a refused credential, Basic never tried.
            #"Digest realm="d", nonce="n", algorithm=MD5-sess"#,
            #"Digest realm="d", nonce="n", algorithm=SHA-256-SESS"#,
        ] {
            let both = HTTPResponse(
                url: url, statusCode: 401, headers: ["WWW-Authenticate": digest + #", Basic realm="b""#])
            #expect(AuthenticationChallenge.parse(both, url: url)?.authenticationScheme == .basic, "\(digest)")
            let alone = HTTPResponse(url: url, statusCode: 401, headers: ["WWW-Authenticate": digest])
            #expect(AuthenticationChallenge.parse(alone, url: url) == nil, "\(digest)")
        }
        let sha = HTTPResponse(
            url: url, statusCode: 401,
            headers: ["WWW-Authenticate": #"Digest realm="d", nonce="n", algorithm=sha-256, qop="auth,auth-int""#])
        #expect(AuthenticationChallenge.parse(sha, url: url)?.authenticationScheme == .digest)
        let session = HTTPResponse(
            url: url, statusCode: 401,
            headers: [
                "WWW-Authenticate": #"Digest realm="d", nonce="n", algorithm=MD5-sess, qop=auth, Basic realm="b""#
            ])
        #expect(AuthenticationChallenge.parse(session, url: url)?.authenticationScheme == .digest)
        // SHA-512/256 only where libcurl computes it rightly (8.8.0 on); before, it sends SHA-256 under its name,
        // so Basic is chosen, and a Digest challenge alone is not answered.
        let sha512 = HTTPResponse(
            url: url, statusCode: 401,
            headers: ["WWW-Authenticate": #"Digest realm="d", nonce="n", algorithm=SHA-512-256, Basic realm="b""#])
        #expect(
            AuthenticationChallenge.parse(sha512, url: url)?.authenticationScheme
                == (CurlFeatures.answersSHA512_256Digest ? .digest : .basic))
        // libcurl answers the first Digest challenge and ignores the rest: a later one is never offered, so a
        // credential isn't chosen for a realm libcurl doesn't answer, nor a Digest space offered it can't.
        var twoRealms = HTTPHeaders()
        twoRealms.add(name: "WWW-Authenticate", value: #"Digest realm="first", nonce="n""#)
        twoRealms.add(name: "WWW-Authenticate", value: #"Digest realm="second", nonce="m", Basic realm="b""#)
        let realms = AuthenticationChallenge.offeredSpaces(
            HTTPResponse(url: url, statusCode: 401, headers: twoRealms), url: url)
        #expect(realms.map(\.realm) == ["first", "b"])
        var unanswerableFirst = HTTPHeaders()
        unanswerableFirst.add(name: "WWW-Authenticate", value: #"Digest realm="odd", nonce="n", algorithm=FOO-BAR"#)
        unanswerableFirst.add(name: "WWW-Authenticate", value: #"Digest realm="md5", nonce="m""#)
        unanswerableFirst.add(name: "WWW-Authenticate", value: #"Basic realm="b""#)
        let spaces = AuthenticationChallenge.offeredSpaces(
            HTTPResponse(url: url, statusCode: 401, headers: unanswerableFirst), url: url)
        #expect(spaces.map(\.authenticationScheme) == [.basic])
        #expect(spaces.map(\.realm) == ["b"])
    }

    /// `text` percent-encoded for a query value.
    private static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    @Test("a credential with CR, LF or NUL is refused with invalidRequest, and nothing of it reaches the server")
    func controlCharactersRefused() async throws {
        let fixture = try await SessionFixture.make()
        let users = Locked(["alice\r\nX-Injected: yes", "alice\0admin"])
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: users.withLock { $0.removeFirst() }, password: "pw"))
        }
        let challenge = Self.queryValue(#"Digest realm="r", nonce="abc123", qop="auth", algorithm=MD5"#)
        for key in ["crlf", "nul"] {
            let call = startCall { () async throws(HeraldError) in
                try await fixture.session.data(
                    for: Request(
                        url: fixture.server.url("/flaky?key=\(key)&fail=2&status=401&www-authenticate=\(challenge)")))
            }
            let result = try await outcome(of: call, timeout: .seconds(30))
            #expect(result.failure?.code == .invalidRequest, "\(result)")
        }
        let sent = fixture.server.requests(forPath: "/flaky")
        #expect(sent.count == 2)
        #expect(!sent.contains { $0.headerValue("X-Injected") != nil || $0.headerValue("Authorization") != nil })
        try await fixture.tearDown()
    }

    @Test("a Digest challenge libcurl can't answer, offered beside Basic, is answered with Basic")
    func unanswerableDigestBesideBasic() async throws {
        let fixture = try await SessionFixture.make()
        let schemes = Locked<[AuthenticationScheme]>([])
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, challenge in
            schemes.withLock { $0.append(challenge.protectionSpace.authenticationScheme) }
            return .useCredential(Credential(user: "u", password: "p"))
        }
        let challenge = Self.queryValue(#"Digest realm="r", Basic realm="b""#)
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/flaky?key=mixed&fail=1&status=401&www-authenticate=\(challenge)")))
        #expect(response.statusCode == 200)
        #expect(schemes.withLock { $0 } == [.basic])
        let sent = fixture.server.requests(forPath: "/flaky")
        #expect(sent.map(\.responseStatus) == [401, 200])
        #expect(sent.last?.headerValue("Authorization")?.hasPrefix("Basic ") == true)
        try await fixture.tearDown()
    }

    @Test("default handling sends the store's credential after the hook's own was refused; refused, not again")
    func defaultHandlingAfterHookRefusal() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "u", password: "right"), forHost: "127.0.0.1", port: fixture.server.port)
        let failures = Locked<[Int]>([])
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, challenge in
            failures.withLock { $0.append(challenge.previousFailureCount) }
            return challenge.previousFailureCount == 0
                ? .useCredential(Credential(user: "u", password: "wrong")) : .performDefaultHandling
        }
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=u&password=right")))
        #expect(response.statusCode == 200)
        #expect(failures.withLock { $0 } == [0, 1])
        // The store's credential refused too: default handling doesn't send it a second time.
        let (_, refused) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=u&password=other")))
        #expect(refused.statusCode == 401)
        #expect(
            fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 401, 200, 401, 401, 401])
        try await fixture.tearDown()
    }

    @Test("default handling sends a credential one origin accepted to another origin that asks for it after a redirect")
    func acceptedCredentialAnswersTheNextOrigin() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        for port in [fixture.server.port, other.port] {
            fixture.session.credentialStore.setCredential(
                Credential(user: "u", password: "p"), forHost: "127.0.0.1", port: port)
        }
        let next = other.url("/auth/basic?user=u&password=p").absoluteString
        let encoded = next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? next
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/auth/basic?user=u&password=p&redirect=\(encoded)")))
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode(Authenticated.self, from: data).user == "u")
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 302])
        #expect(other.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200])
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("after a redirect to another origin, the data hooks see only the answer that origin's credential gets")
    func dataHooksAfterRedirectToAnotherOrigin() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        // A credential for the redirect's target alone: the first request's origin has none.
        fixture.session.credentialStore.setCredential(
            Credential(user: "a", password: "b"), forHost: "127.0.0.1", port: other.port)
        let statuses = Locked<[Int]>([])
        let chunks = Locked(Data())
        fixture.session.dataTaskDidReceiveData = { _, data in chunks.withLock { $0.append(data) } }
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            statuses.withLock { $0.append(response.statusCode) }
            return .allow
        }
        let target = try #require(
            other.url("/auth/basic?user=a&password=b").absoluteString.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics))
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/redirect-to?url=\(target)")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(statuses.withLock { $0 } == [200])
        #expect(try JSONDecoder().decode(Authenticated.self, from: chunks.withLock { $0 }).user == "a")
        #expect(other.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200])
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("the data hooks see only the answer to the credential, never the 401 it answered")
    func dataHooksSeeOnlyTheFinalResponse() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "a", password: "b"), forHost: "127.0.0.1", port: fixture.server.port)
        let chunks = Locked(Data())
        let statuses = Locked<[Int]>([])
        fixture.session.dataTaskDidReceiveData = { _, data in chunks.withLock { $0.append(data) } }
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            statuses.withLock { $0.append(response.statusCode) }
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=a&password=b")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let call = try #require(log.all.first)
        #expect(call.response?.statusCode == 200)
        #expect(statuses.withLock { $0 } == [200])
        let streamed = chunks.withLock { $0 }
        #expect(try JSONDecoder().decode(Authenticated.self, from: streamed).user == "a")
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200])

        // A 401 no credential answers (wrong password, refused once) completes the task: the hooks see that
        // last 401 once, not the one the credential answered.
        let refused = CompletionLog()
        let second = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=a&password=other")),
            completionHandler: refused.handler)
        second.resume()
        try await fixture.recorder.waitForCompletions(2)
        await fixture.session.completionQueueBarrier()
        #expect(refused.all.first?.response?.statusCode == 401)
        #expect(statuses.withLock { $0 } == [200, 401])
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401, 200, 401, 401])
        // Without any credential source the 401 is the task's answer, and the hooks see it once.
        fixture.session.credentialStore.removeAll()
        let third = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=a&password=b")), completionHandler: refused.handler)
        third.resume()
        try await fixture.recorder.waitForCompletions(3)
        #expect(statuses.withLock { $0 } == [200, 401, 401])
        try await fixture.tearDown()
    }

    @Test("the response hook's .becomeDownload applies to the answer to the credential, not to the 401")
    func becomeDownloadAfterChallenge() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.credentialStore.setCredential(
            Credential(user: "a", password: "b"), forHost: "127.0.0.1", port: fixture.server.port)
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=a&password=b")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let call = try #require(log.all.first)
        #expect(call.response?.statusCode == 200)
        let file = try #require(call.object as? URL)
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("authenticated"))
        try await fixture.tearDown()
    }

    @Test("the resource timeout ends a task waiting out a retry's delay, with one resume and one complete")
    func resourceTimeoutDuringRetryDelay() async throws {
        var configuration = SessionConfiguration()
        // Long enough for the first attempt to reach the server on a loaded machine: a failure once the time is
        // spent is not offered to the retrier.
        configuration.timeoutIntervalForResource = 8
        let fixture = try await SessionFixture.make(configuration: configuration)
        fixture.session.interceptor = Interceptor(retry: { _ in .retryWithDelay(120) })
        let start = ContinuousClock.now
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=slow-retry&fail=5&status=503")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        #expect(ContinuousClock.now - start < .seconds(60))
        #expect(log.all.first?.error?.code == .timedOut)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(fixture.server.requests(forPath: "/flaky").count == 1)
        try await fixture.tearDown()
    }

    @Test("a response to a URL with a user name and password is not stored in the response cache")
    func urlCredentialNotCached() async throws {
        let cache = InMemoryResponseCache()
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        let fixture = try await SessionFixture.make(configuration: configuration)
        let url = try #require(
            URL(string: "http://bob:hunter2@127.0.0.1:\(fixture.server.port)/headers?Cache-Control=max-age%3D600"))
        let (_, response) = try await fixture.session.data(for: Request(url: url))
        #expect(response.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/headers").first?.headerValue("Authorization") != nil)
        #expect(cache.cachedResponse(for: Request(url: url)) == nil)
        // Without the credential the same response is stored.
        let anonymous = fixture.server.url("/headers?Cache-Control=max-age%3D600")
        _ = try await fixture.session.data(for: Request(url: anonymous))
        #expect(cache.cachedResponse(for: Request(url: anonymous)) != nil)
        try await fixture.tearDown()
    }

    @Test("the resource timeout ends a task whose challenge hook takes longer, and no next request is sent")
    func resourceTimeoutWhileHookDecides() async throws {
        var configuration = SessionConfiguration()
        // Long enough for the first exchange on a busy machine (the whole suite in parallel, a sanitizer); the
        // hook then holds the task far longer.
        configuration.timeoutIntervalForResource = 10
        let fixture = try await SessionFixture.make(configuration: configuration)
        let entered = Locked(false)
        let released = DispatchSemaphore(value: 0)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            entered.withLock { $0 = true }
            // Held until the test has seen the outcome (at most 60 s).
            _ = released.wait(timeout: .now() + 60)
            return .useCredential(Credential(user: "u", password: "p"))
        }
        let start = ContinuousClock.now
        let call = startCall { () async throws(HeraldError) in
            try await fixture.session.data(for: Request(url: fixture.server.url("/auth/basic?user=u&password=p")))
        }
        let result = try await outcome(of: call, timeout: .seconds(50))
        let elapsed = ContinuousClock.now - start
        released.signal()
        #expect(entered.withLock { $0 })
        #expect(result.failure?.code == .timedOut, "\(result)")
        // Ended while the hook still held it: by the task's timer, not by the hook's return.
        #expect(elapsed < .seconds(40))
        #expect(fixture.server.requests(forPath: "/auth/basic").count == 1)
        try await fixture.tearDown()
    }
}

extension Result {
    /// The error, if the result is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
