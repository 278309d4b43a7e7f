import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Response cache")
struct ResponseCacheTests {
    /// A session with an in-memory cache; the body is kept raw so it can be compared.
    private static func fixture(capacity: Int = 1 << 20) async throws -> (SessionFixture, InMemoryResponseCache) {
        let cache = InMemoryResponseCache(capacity: capacity)
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        return (
            try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer()), cache
        )
    }

    /// Stores a `200` with `headers` and `body` for `request` in `cache`, as if it came `age` seconds ago; returns it.
    @discardableResult
    private static func storeEntry(
        _ body: String, headers: HTTPHeaders, for request: Request, in cache: InMemoryResponseCache,
        age: TimeInterval = 120
    ) -> CachedResponse {
        let entry = CachedResponse(
            response: HTTPResponse(url: request.url, statusCode: 200, headers: headers), data: Data(body.utf8),
            storageDate: Date(timeIntervalSinceNow: -age))
        cache.storeCachedResponse(entry, for: request)
        return entry
    }

    /// Runs one data task to completion and returns its completion-handler call.
    private static func run(
        _ fixture: SessionFixture, _ request: Request, completions: Int
    ) async throws -> (task: DataTask, call: CompletionLog.Call) {
        let log = CompletionLog()
        let task = try fixture.session.dataTask(with: request, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(completions)
        return (task, try #require(log.all.first))
    }

    @Test("spellings of one resource share a cache entry: no fragment or user information, case, default port, /")
    func keyNormalization() throws {
        let cache = InMemoryResponseCache()
        let entry = CachedResponse(
            response: HTTPResponse(url: URL(string: "http://127.0.0.1/doc")!, statusCode: 200, headers: [:]),
            data: Data("doc".utf8))
        cache.storeCachedResponse(entry, for: Request(url: URL(string: "http://127.0.0.1/doc#top")!))
        for spelling in ["http://127.0.0.1/doc", "HTTP://127.0.0.1:80/doc#other", "http://u:p@127.0.0.1/doc"] {
            #expect(cache.cachedResponse(for: Request(url: URL(string: spelling)!)) != nil, "\(spelling)")
        }
        // A PUT naming the user's credential changes the same resource: its invalidation reaches the entry.
        cache.removeCachedResponse(for: Request(url: URL(string: "http://u:tok@127.0.0.1/doc")!))
        #expect(cache.cachedResponse(for: Request(url: URL(string: "http://127.0.0.1/doc#top")!)) == nil)
        #expect(ResponseCacheKey.normalized(URL(string: "https://LocalHost:443")!) == "https://localhost/")
        #expect(
            ResponseCacheKey.normalized(URL(string: "http://127.0.0.1:8080/a?q=1")!) == "http://127.0.0.1:8080/a?q=1")
        // The spellings the scan passes as they are, and those it hands to the parse.
        for (spelling, normal) in [
            ("http://127.0.0.1/a", "http://127.0.0.1/a"),
            ("https://localhost:8443/b?c=/d", "https://localhost:8443/b?c=/d"),
            ("http://127.0.0.1:80/a", "http://127.0.0.1/a"), ("https://localhost:443/a", "https://localhost/a"),
            ("http://127.0.0.1/a#top", "http://127.0.0.1/a"), ("http://127.0.0.1?q=/x", "http://127.0.0.1/?q=/x"),
            // A fragment before any path, and dot segments, which libcurl removes: the server sees `/`, `/b`.
            ("http://127.0.0.1#/x", "http://127.0.0.1/"), ("http://127.0.0.1/a/../b", "http://127.0.0.1/b"),
            ("http://127.0.0.1/a/./b?q=1", "http://127.0.0.1/a/b?q=1"),
        ] {
            #expect(ResponseCacheKey.normalized(URL(string: spelling)!) == normal, "\(spelling)")
        }
    }

    @Test("a fresh response is served from the cache without touching the network, with one resume and one complete")
    func freshServedOffline() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60"))
        let clock = ContinuousClock()
        let stored = clock.now
        let first = try await Self.run(fixture, request, completions: 1)
        #expect(cache.count == 1)
        let second = try await Self.run(fixture, request, completions: 2)
        let elapsed = clock.now - stored
        #expect(fixture.server.requestCount == 1)
        #expect(second.call.error == nil)
        // The stored head, with the Age a cache adds to what it serves (RFC 9111 §4): whole seconds since it was
        // stored, never more than have passed (a loaded machine may take seconds between the two).
        var served = try #require(second.call.response)
        let age = try #require(served.headers["Age"].flatMap { Int($0) })
        #expect(age >= 0 && Duration.seconds(age) <= elapsed + .seconds(1), "Age \(age) after \(elapsed)")
        #expect(first.call.response?.headers["Age"] == nil)
        served.headers.remove(name: "Age")
        #expect(served == first.call.response)
        #expect(second.call.object as? Data == first.call.object as? Data)
        #expect((second.call.object as? Data)?.isEmpty == false)
        #expect(second.task.metrics == nil)
        #expect(second.task.hopMetrics.isEmpty)
        #expect(first.task.metrics != nil)
        #expect(first.task.hopMetrics == [first.task.metrics].compactMap { $0 })
        #expect(fixture.recorder.timeline(ofTask: second.task.taskIdentifier) == [.resume, .complete])
        let completion = try #require(fixture.recorder.completions.last)
        #expect(completion.metrics == nil)
        #expect(completion.responseData == first.call.object as? Data)
        try await fixture.tearDown()
    }

    @Test(
        "a response is not stored without explicit freshness, or with no-store or no-cache",
        arguments: [
            "", "Cache-Control=no-store", "Cache-Control=max-age%3D60,%20no-store", "Cache-Control=no-cache",
            "Cache-Control=max-age%3D0",
        ])
    func notStored(query: String) async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?\(query)"))
        _ = try await Self.run(fixture, request, completions: 1)
        _ = try await Self.run(fixture, request, completions: 2)
        #expect(fixture.server.requestCount == 2)
        #expect(cache.count == 0)
        try await fixture.tearDown()
    }

    @Test("Expires minus Date gives the freshness, and private responses are kept by this client cache")
    func expiresAndPrivate() async throws {
        let (fixture, _) = try await Self.fixture()
        // Dated now: the time since `Date` counts in the age (RFC 9111 §4.2.3).
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE,'%20'dd'%20'MMM'%20'yyyy'%20'HH:mm:ss'%20GMT'"
        let now = Date()
        let query =
            "Cache-Control=private&Date=\(formatter.string(from: now))"
            + "&Expires=\(formatter.string(from: now.addingTimeInterval(600)))"
        let request = Request(url: fixture.server.url("/headers?\(query)"))
        _ = try await Self.run(fixture, request, completions: 1)
        _ = try await Self.run(fixture, request, completions: 2)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test(
        "a directive inside another directive's quoted argument does not count",
        arguments: [
            // ext="a, no-store, b", max-age=60: no no-store, fresh for 60 s → the second request is a hit.
            ("ext%3D%22a,%20no-store,%20b%22,%20max-age%3D60", 1),
            // private="x, max-age=60": no max-age, no freshness → not stored, both go to the network.
            ("private%3D%22x,%20max-age%3D60%22", 2),
        ])
    func quotedDirectives(cacheControl: String, serverRequests: Int) async throws {
        let (fixture, _) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=\(cacheControl)"))
        let first = try await Self.run(fixture, request, completions: 1)
        #expect(first.call.response?.headers["Cache-Control"]?.contains("\"") == true)
        _ = try await Self.run(fixture, request, completions: 2)
        #expect(fixture.server.requestCount == serverRequests)
        try await fixture.tearDown()
    }

    @Test(
        "a caller's own If-None-Match or If-Modified-Since met by a fresh entry is answered 304 from the cache",
        arguments: [
            ("If-None-Match", "\"c1\"", 304), ("If-None-Match", "W/\"c1\"", 304),
            ("If-None-Match", "\"x\", \"c1\"", 304),
            ("If-None-Match", "*", 304), ("If-None-Match", "\"other\"", 200),
            ("If-Modified-Since", "Sun, 01 Jan 2023 00:00:00 GMT", 304),
            ("If-Modified-Since", "Sat, 31 Dec 2022 23:59:59 GMT", 200),
        ])
    func conditionalRequestOnFreshEntry(field: String, value: String, status: Int) async throws {
        let (fixture, _) = try await Self.fixture()
        let url = fixture.server.url(
            "/headers?Cache-Control=max-age%3D60&ETag=%22c1%22&Last-Modified=Sun%2C%2001%20Jan%202023%2000%3A00%3A00%20GMT"
        )
        let first = try await Self.run(fixture, Request(url: url), completions: 1)
        let body = try #require(first.call.object as? Data)
        let conditional = try await Self.run(fixture, Request(url: url, headers: [field: value]), completions: 2)
        #expect(fixture.server.requestCount == 1)
        #expect(conditional.call.response?.statusCode == status)
        #expect(conditional.call.response?.headers["ETag"] == "\"c1\"")
        if status == 304 {
            #expect(conditional.call.response?.headers["Content-Length"] == nil)
        } else {
            #expect(conditional.call.object as? Data == body)
        }
        try await fixture.tearDown()
    }

    @Test("a stored response other than a 2xx answers a conditional request as itself, never as a 304")
    func conditionsApplyToSuccessesOnly() throws {
        let url = try #require(URL(string: "http://127.0.0.1/conditions"))
        for status in [301, 404, 410] {
            let entry = CachedResponse(
                response: HTTPResponse(
                    url: url, statusCode: status,
                    headers: ["ETag": "\"c1\"", "Date": "Sun, 01 Jan 2023 00:00:00 GMT", "Cache-Control": "max-age=60"]),
                data: Data("stored".utf8), storageDate: Date())
            for field in [("If-None-Match", "\"c1\""), ("If-Modified-Since", "Mon, 02 Jan 2023 00:00:00 GMT")] {
                let answer = ResponseCachePolicy.answer(to: Request(url: url, headers: [field.0: field.1]), from: entry)
                #expect(answer.response.statusCode == status)
                #expect(answer.body == Data("stored".utf8))
            }
        }
    }

    @Test("a request with Cache-Control: no-cache bypasses the cache")
    func requestNoCache() async throws {
        let (fixture, _) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60")
        _ = try await Self.run(fixture, Request(url: url), completions: 1)
        _ = try await Self.run(fixture, Request(url: url, headers: ["Cache-Control": "no-cache"]), completions: 2)
        #expect(fixture.server.requestCount == 2)
        _ = try await Self.run(fixture, Request(url: url), completions: 3)
        #expect(fixture.server.requestCount == 2)
        try await fixture.tearDown()
    }

    @Test("a response served from the cache carries its current age in Age, replacing the one it was stored with")
    func servedWithItsAge() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?aged=1"))
        Self.storeEntry("aged", headers: ["Cache-Control": "max-age=600", "Age": "30"], for: request, in: cache)
        let served = try await Self.run(fixture, request, completions: 1)
        #expect(fixture.server.requestCount == 0)
        // 30 s old when stored, 120 s in the cache since.
        let age = try #require(served.call.response?.headers["Age"].flatMap { Int($0) })
        #expect((150...152).contains(age), "Age: \(age)")
        #expect(served.call.response?.headers.values(for: "Age").count == 1)
        try await fixture.tearDown()
    }

    @Test("a request with credentials is not answered from an entry an anonymous request stored")
    func credentialsSkipAnonymousEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D300")
        _ = try await Self.run(fixture, Request(url: url), completions: 1)
        #expect(cache.count == 1)
        let bearer = try await Self.run(
            fixture, Request(url: url, headers: ["Authorization": "Bearer token"]), completions: 2)
        #expect(fixture.server.requestCount == 2)
        #expect(bearer.task.metrics != nil)
        var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        components.user = "alice"
        components.password = "secret"
        _ = try await Self.run(fixture, Request(url: try #require(components.url)), completions: 3)
        #expect(fixture.server.requestCount == 3)
        // The anonymous entry stays, for anonymous requests.
        _ = try await Self.run(fixture, Request(url: url), completions: 4)
        #expect(fixture.server.requestCount == 3)
        try await fixture.tearDown()
    }

    @Test("a server error answering a revalidation leaves the stored entry, for a request that accepts it stale")
    func serverErrorKeepsEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/flaky?key=revalidated&fail=1&status=503"))
        Self.storeEntry("stored", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""], for: request, in: cache)
        let failed = try await Self.run(fixture, request, completions: 1)
        #expect(failed.call.response?.statusCode == 503)
        #expect(fixture.server.requests.first?.headers.contains { $0.name.lowercased() == "if-none-match" } == true)
        #expect(cache.cachedResponse(for: request)?.data == Data("stored".utf8))
        let stale = try await Self.run(
            fixture, Request(url: request.url, headers: ["Cache-Control": "max-stale"]), completions: 2)
        #expect(fixture.server.requestCount == 1)
        #expect(stale.call.object as? Data == Data("stored".utf8))
        try await fixture.tearDown()
    }

    @Test("a stale entry goes to the network, and the new response replaces it")
    func staleGoesToNetwork() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60"))
        let old = Self.storeEntry("old", headers: ["Cache-Control": "max-age=60"], for: request, in: cache)
        let first = try await Self.run(fixture, request, completions: 1)
        #expect(fixture.server.requestCount == 1)
        #expect(first.call.object as? Data != Data("old".utf8))
        let stored = try #require(cache.cachedResponse(for: request))
        #expect(stored.storageDate > old.storageDate)
        try await fixture.tearDown()
    }

    @Test("a stale entry with an ETag is revalidated: a 304 completes from the cache and refreshes the entry")
    func revalidation() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60&ETag=%22v1%22&X-Round=2"))
        let old = CachedResponse(
            response: HTTPResponse(
                url: request.url, statusCode: 200,
                headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "X-Round": "1", "Content-Length": "6"]),
            data: Data("cached".utf8), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(old, for: request)
        let order = OrderedLog()
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            order.append("response \(response.statusCode)")
            return .allow
        }
        let revalidated = try await Self.run(fixture, request, completions: 1)
        #expect(fixture.server.requestCount == 1)
        let sent = try #require(fixture.server.requests.first)
        #expect(sent.headers.contains { $0.name.lowercased() == "if-none-match" && $0.value == "\"v1\"" })
        #expect(sent.responseStatus == 304)
        #expect(revalidated.call.error == nil)
        #expect(revalidated.call.response?.statusCode == 200)
        #expect(revalidated.call.response?.headers["X-Round"] == "2")
        #expect(revalidated.call.response?.headers["Content-Length"] == "6")
        #expect(revalidated.call.object as? Data == Data("cached".utf8))
        #expect(revalidated.task.metrics != nil)
        #expect(revalidated.task.hopMetrics == [revalidated.task.metrics].compactMap { $0 })
        #expect(order.all.isEmpty)
        let refreshed = try #require(cache.cachedResponse(for: request))
        #expect(refreshed.storageDate > old.storageDate)
        #expect(refreshed.data == Data("cached".utf8))

        // Fresh again: the next task never reaches the server.
        let served = try await Self.run(fixture, request, completions: 2)
        #expect(fixture.server.requestCount == 1)
        #expect(served.call.object as? Data == Data("cached".utf8))
        #expect(fixture.recorder.timeline(ofTask: served.task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a 304 with the strong form of a stored weak ETag (nginx's answer for a body it compressed) confirms it")
    func strongTagConfirmsWeakEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers/not-modified?Cache-Control=max-age%3D60&ETag=%22v1%22"))
        let old = CachedResponse(
            response: HTTPResponse(
                url: request.url, statusCode: 200, headers: ["Cache-Control": "max-age=60", "ETag": "W/\"v1\""]),
            data: Data("cached".utf8), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(old, for: request)
        let revalidated = try await Self.run(fixture, request, completions: 1)
        // Before, the 304 was taken for another representation's, and the request went again without validators.
        #expect(fixture.server.requestCount == 1)
        #expect(fixture.server.requests.first?.responseStatus == 304)
        #expect(revalidated.call.error == nil)
        #expect(revalidated.call.object as? Data == Data("cached".utf8))
        try await fixture.tearDown()
    }

    @Test("a 304 to the caller's own If-None-Match freshens the stale entry it confirms, rather than removing it")
    func callersConditionalFreshensEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60&ETag=%22v1%22&X-Round=2")
        let stale = CachedResponse(
            response: HTTPResponse(
                url: url, statusCode: 200,
                headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "X-Round": "1", "Content-Length": "6"]),
            data: Data("cached".utf8), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(stale, for: Request(url: url))
        let conditional = Request(url: url, headers: ["If-None-Match": "\"v1\""])
        let answered = try await Self.run(fixture, conditional, completions: 1)
        // The caller asked conditionally: its answer is the server's 304.
        #expect(answered.call.response?.statusCode == 304)
        #expect(fixture.server.requests.first?.responseStatus == 304)
        let freshened = try #require(cache.cachedResponse(for: Request(url: url)))
        #expect(freshened.storageDate > stale.storageDate)
        #expect(freshened.response.statusCode == 200)
        #expect(freshened.response.headers["X-Round"] == "2")
        #expect(freshened.data == Data("cached".utf8))
        // Fresh again: a plain GET is served without the network.
        let served = try await Self.run(fixture, Request(url: url), completions: 2)
        #expect(fixture.server.requestCount == 1)
        #expect(served.call.object as? Data == Data("cached".utf8))

        // A 304 naming another validator confirms nothing: the entry is left as it was, not freshened.
        let other = CachedResponse(
            response: HTTPResponse(
                url: url, statusCode: 200, headers: ["Cache-Control": "max-age=60", "ETag": "\"v0\""]),
            data: Data("older".utf8), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(other, for: Request(url: url))
        _ = try await Self.run(fixture, conditional, completions: 3)
        #expect(cache.cachedResponse(for: Request(url: url)) == other)
        try await fixture.tearDown()
    }

    @Test("a 304 to the caller's own condition that says no-store removes the entry it confirms; with credentials, not")
    func callersConditionalNoStoreRemovesEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=no-store&ETag=%22v1%22")
        // Stale, with a Last-Modified that heuristic freshness would have kept fresh for days once freshened.
        let entry = Self.storeEntry(
            "stored",
            headers: ["Cache-Control": "no-cache", "ETag": "\"v1\"", "Last-Modified": "Sat, 01 Jun 2024 00:00:00 GMT"],
            for: Request(url: url), in: cache)
        // A conditional request with credentials: its answer is no one else's, and leaves the entry as it is.
        let authorized = Request(url: url, headers: ["If-None-Match": "\"v1\"", "Authorization": "Bearer t"])
        let first = try await Self.run(fixture, authorized, completions: 1)
        #expect(first.call.response?.statusCode == 304)
        #expect(cache.cachedResponse(for: Request(url: url)) == entry)
        // Before, the entry took the 304's `no-store` and kept its Last-Modified: served without the network for
        // days after the server said not to store it.
        let answered = try await Self.run(
            fixture, Request(url: url, headers: ["If-None-Match": "\"v1\""]), completions: 2)
        #expect(answered.call.response?.statusCode == 304)
        #expect(fixture.server.requests.map(\.responseStatus) == [304, 304])
        #expect(cache.cachedResponse(for: Request(url: url)) == nil)
        try await fixture.tearDown()
    }

    @Test("a 304 to the caller's own conditional Range request freshens the whole entry; one saying no-store, nothing")
    func callersConditionalRangeFreshensEntry() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60&ETag=%22v1%22&X-Round=2")
        let stale = Self.storeEntry(
            "cached", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""], for: Request(url: url), in: cache)
        // The caller's own request saying no-store: no part of its answer is stored, and the entry stays as it was.
        let unstored = Request(url: url, headers: ["If-None-Match": "\"v1\"", "Cache-Control": "no-store"])
        _ = try await Self.run(fixture, unstored, completions: 1)
        #expect(cache.cachedResponse(for: Request(url: url)) == stale)
        // A Range asked for beside the condition: the 304 confirms the whole entry, which is freshened (judged as the
        // answer to a Range request, it would be removed).
        let ranged = Request(url: url, headers: ["If-None-Match": "\"v1\"", "Range": "bytes=0-1"])
        let answered = try await Self.run(fixture, ranged, completions: 2)
        #expect(answered.call.response?.statusCode == 304)
        let freshened = try #require(cache.cachedResponse(for: Request(url: url)))
        #expect(freshened.storageDate > stale.storageDate)
        #expect(freshened.response.headers["X-Round"] == "2")
        try await fixture.tearDown()
    }

    @Test(
        "a 304 without validators to the caller's own condition freshens the stored entry only when the condition names it",
        arguments: [
            ("If-None-Match", "\"v2\"", false), ("If-None-Match", "*", false), ("If-None-Match", "W/\"v1\"", true),
            ("If-Modified-Since", "Mon, 01 Jan 2024 00:00:00 GMT", false),
            ("If-Modified-Since", "Sat, 01 Jun 2024 00:00:00 GMT", true),
        ])
    func callersConditionalMustNameEntry(field: String, value: String, freshens: Bool) async throws {
        let (fixture, cache) = try await Self.fixture()
        // The server answers any conditional request with a 304 that carries no ETag and no Last-Modified.
        let url = fixture.server.url("/headers/not-modified?Cache-Control=max-age%3D60")
        let stale = Self.storeEntry(
            "stored",
            headers: [
                "Cache-Control": "max-age=60", "ETag": "\"v1\"", "Last-Modified": "Sat, 01 Jun 2024 00:00:00 GMT",
            ], for: Request(url: url), in: cache)
        let answered = try await Self.run(fixture, Request(url: url, headers: [field: value]), completions: 1)
        #expect(answered.call.response?.statusCode == 304)
        let entry = try #require(cache.cachedResponse(for: Request(url: url)))
        #expect((entry.storageDate > stale.storageDate) == freshens)
        #expect(entry.data == Data("stored".utf8))
        try await fixture.tearDown()
    }

    @Test(
        "an answer that isn't the URL's whole response leaves the stored entry alone",
        arguments: [("Range", "bytes=0-9", 206), ("Authorization", "Bearer herald-test", 200)])
    func partialOrPrivateAnswerKeepsEntry(field: String, value: String, status: Int) async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/bytes/100")
        let stored = CachedResponse(
            response: HTTPResponse(url: url, statusCode: 200, headers: ["Cache-Control": "max-age=60"]),
            data: Data(repeating: 1, count: 100), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(stored, for: Request(url: url))
        let answered = try await Self.run(fixture, Request(url: url, headers: [field: value]), completions: 1)
        #expect(answered.call.response?.statusCode == status)
        #expect(fixture.server.requestCount == 1)
        #expect(cache.cachedResponse(for: Request(url: url)) == stored)
        try await fixture.tearDown()
    }

    @Test("a POST redirected by a 307 invalidates the stored GET of the URL it was sent on to")
    func redirectedUnsafeRequestInvalidatesItsTarget() async throws {
        let (fixture, cache) = try await Self.fixture()
        let path = "/headers?Cache-Control=max-age%3D600"
        let stored = Request(url: fixture.server.url(path))
        _ = try await Self.run(fixture, stored, completions: 1)
        #expect(cache.count == 1)
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let post = Request(
            url: fixture.server.url("/redirect-to?url=\(encoded)&status=307"), method: "POST", body: Data("x".utf8))
        _ = try await Self.run(fixture, post, completions: 2)
        // Before, only the redirecting URL was invalidated, and the changed resource was served from the cache.
        _ = try await Self.run(fixture, stored, completions: 3)
        #expect(fixture.server.requests(forPath: "/headers").map(\.method) == ["GET", "POST", "GET"])
        try await fixture.tearDown()
    }

    @Test("a POST answered 303 invalidates its URL's stored GET even when the page it leads to answers 404")
    func unsafeRequestRedirectedToAnErrorInvalidates() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/redirect-to?url=%2Fstatus%2F404&status=303")
        let stored = CachedResponse(
            response: HTTPResponse(url: url, statusCode: 200, headers: ["Cache-Control": "max-age=600"]),
            data: Data("cart".utf8), storageDate: Date())
        cache.storeCachedResponse(stored, for: Request(url: url))
        _ = try await Self.run(fixture, Request(url: url, method: "POST", body: Data("x".utf8)), completions: 1)
        #expect(fixture.server.requests.map(\.method) == ["POST", "GET"])
        // Before, only the final 404 was looked at, and the changed resource stayed fresh in the cache.
        #expect(cache.cachedResponse(for: Request(url: url)) == nil)
        try await fixture.tearDown()
    }

    /// Adds the tenant's field to every request of the task it is set on.
    private struct TenantAdapter: RequestInterceptor {
        func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
            var adapted = request
            adapted.headers.replaceOrAdd(name: "X-Tenant", value: "acme")
            return adapted
        }
    }

    @Test("a stale-while-revalidate hit revalidates in the background through the task's own interceptor")
    func backgroundRevalidationKeepsTheInterceptor() async throws {
        let (fixture, _) = try await Self.fixture()
        let request = Request(
            url: fixture.server.url("/headers?Cache-Control=max-age%3D0,%20stale-while-revalidate%3D600&ETag=%22a%22"))
        for completions in 1...2 {
            let log = CompletionLog()
            let task = try fixture.session.dataTask(with: request, completionHandler: log.handler)
            task.interceptor = TenantAdapter()
            task.resume()
            try await fixture.recorder.waitForCompletions(completions)
        }
        // The second was served stale from the cache; its revalidation is a third task.
        try await fixture.recorder.waitForCompletions(3)
        let sent = fixture.server.requests(forPath: "/headers")
        #expect(sent.count == 2)
        // Before, the revalidation went out without the field the entry was stored under.
        #expect(sent.map { $0.headerValue("X-Tenant") } == ["acme", "acme"])
        #expect(sent.last?.headerValue("If-None-Match") == #""a""#)
        try await fixture.tearDown()
    }

    @Test("stale-while-revalidate hits while a revalidation runs start no other: one question to the server")
    func oneBackgroundRevalidationAtATime() async throws {
        let (fixture, cache) = try await Self.fixture()
        // The revalidation of this entry never gets an answer: it stays in flight while the hits come.
        let request = Request(url: fixture.server.url("/fault/stall"))
        Self.storeEntry(
            "stale", headers: ["Cache-Control": "max-age=1, stale-while-revalidate=600", "ETag": "\"a\""],
            for: request, in: cache, age: 60)
        for completions in 1...5 {
            let served = try await Self.run(fixture, request, completions: completions)
            #expect(served.call.object as? Data == Data("stale".utf8))
        }
        #expect(fixture.session.tasks.count == 1)
        let revalidation = try #require(fixture.session.tasks.first)
        revalidation.cancel()
        try await fixture.recorder.waitForCompletions(6)
        // Once it ended, the next hit revalidates again.
        _ = try await Self.run(fixture, request, completions: 7)
        #expect(fixture.session.tasks.count == 1)
        try await fixture.tearDown()
    }

    @Test("a stale-while-revalidate hit of an only-if-cached request starts no background revalidation")
    func onlyIfCachedStartsNoRevalidation() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60&ETag=%22a%22")
        Self.storeEntry(
            "stale", headers: ["Cache-Control": "max-age=1, stale-while-revalidate=600", "ETag": "\"a\""],
            for: Request(url: url), in: cache, age: 60)
        let served = try await Self.run(
            fixture, Request(url: url, headers: ["Cache-Control": "only-if-cached"]), completions: 1)
        #expect(served.call.object as? Data == Data("stale".utf8))
        // Before, a revalidation task started, asked the cache alone again and completed with a made-up 504. A plain
        // hit after it does revalidate: its task is the second completion, and the server's first request.
        let plain = try await Self.run(fixture, Request(url: url), completions: 2)
        #expect(plain.call.object as? Data == Data("stale".utf8))
        try await fixture.recorder.waitForCompletions(3)
        let statuses = fixture.recorder.completions.map { $0.response?.statusCode }
        #expect(!statuses.contains(504), "\(statuses)")
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("a stale entry whose ETag no longer matches is replaced by the server's 200")
    func revalidationChanged() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60&ETag=%22v2%22"))
        Self.storeEntry("cached", headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""], for: request, in: cache)
        let fetched = try await Self.run(fixture, request, completions: 1)
        #expect(fixture.server.requests.first?.responseStatus == 200)
        #expect(fetched.call.response?.statusCode == 200)
        let body = try #require(fetched.call.object as? Data)
        #expect(body != Data("cached".utf8))
        #expect(cache.cachedResponse(for: request)?.data == body)
        try await fixture.tearDown()
    }

    @Test(
        "a 304 confirming another representation than the stale entry's is not merged: the request goes again without validators",
        arguments: [
            ("ETag", "%22v2%22", "\"v1\"", false), ("ETag", "W/%22v2%22", "\"v1\"", false),
            ("Last-Modified", "Tue,%2003%20Jan%202023%2000:00:00%20GMT", "Mon, 02 Jan 2023 00:00:00 GMT", false),
            ("ETag", "W/%22v1%22", "\"v1\"", true),
        ])
    func revalidationRefuted(field: String, answered: String, stored: String, confirms: Bool) async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(
            url: fixture.server.url("/headers/not-modified?Cache-Control=max-age%3D60&\(field)=\(answered)"))
        let old = CachedResponse(
            response: HTTPResponse(
                url: request.url, statusCode: 200,
                headers: ["Cache-Control": "max-age=60", field: stored, "Content-Length": "6"]),
            data: Data("cached".utf8), storageDate: Date(timeIntervalSinceNow: -120))
        cache.storeCachedResponse(old, for: request)
        let fetched = try await Self.run(fixture, request, completions: 1)
        #expect(fetched.call.error == nil)
        #expect(fetched.call.response?.statusCode == 200)
        #expect(fixture.recorder.timeline(ofTask: fetched.task.taskIdentifier) == [.resume, .complete])
        if confirms {
            #expect(fixture.server.requestCount == 1)
            #expect(fetched.call.object as? Data == Data("cached".utf8))
            return try await fixture.tearDown()
        }
        #expect(fixture.server.requests.map(\.responseStatus) == [304, 200])
        let conditional = ["if-none-match", "if-modified-since"]
        #expect(fixture.server.requests.first?.headers.contains { conditional.contains($0.name.lowercased()) } == true)
        #expect(fixture.server.requests.last?.headers.contains { conditional.contains($0.name.lowercased()) } == false)
        let body = try #require(fetched.call.object as? Data)
        #expect(body != Data("cached".utf8))
        #expect(fetched.task.hopMetrics.count == 2)
        let replaced = try #require(cache.cachedResponse(for: request))
        #expect(replaced.data == body)
        try await fixture.tearDown()
    }

    @Test("dataTaskWillCacheResponse sees the proposal and can veto it or change it")
    func willCacheHook() async throws {
        let (fixture, cache) = try await Self.fixture()
        let proposals = Collected<(task: Int, status: Int, bytes: Int)>()
        fixture.session.dataTaskWillCacheResponse = { task, proposed in
            proposals.append((task.taskIdentifier, proposed.response.statusCode, proposed.data.count))
            if proposed.response.url.path == "/headers", proposed.response.url.query?.contains("veto") == true {
                return nil
            }
            var changed = proposed
            changed.data = Data("changed".utf8)
            return changed
        }
        let vetoed = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60&X-Mode=veto"))
        let first = try await Self.run(fixture, vetoed, completions: 1)
        _ = try await Self.run(fixture, vetoed, completions: 2)
        #expect(fixture.server.requestCount == 2)
        #expect(cache.count == 0)
        #expect(proposals.all.first?.task == first.task.taskIdentifier)
        #expect(proposals.all.first?.status == 200)
        #expect(proposals.all.first?.bytes == (first.call.object as? Data)?.count)

        let changed = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60"))
        _ = try await Self.run(fixture, changed, completions: 3)
        let served = try await Self.run(fixture, changed, completions: 4)
        #expect(fixture.server.requestCount == 3)
        #expect(served.call.object as? Data == Data("changed".utf8))
        try await fixture.tearDown()
    }

    @Test("POST responses, error statuses and uploads are never stored")
    func onlyGet200() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60")
        _ = try await Self.run(fixture, Request(url: url, method: "POST"), completions: 1)
        let upload = try fixture.session.uploadTask(with: Request(url: url, method: "PUT"), from: Data("x".utf8))
        upload.resume()
        try await fixture.recorder.waitForCompletions(2)
        _ = try await Self.run(fixture, Request(url: fixture.server.url("/status/404")), completions: 3)
        #expect(cache.count == 0)
        try await fixture.tearDown()
    }

    /// A stored 200 with a body of `size` bytes, for the cache's own tests.
    private static func entry(_ size: Int) -> CachedResponse {
        CachedResponse(
            response: HTTPResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: 200, headers: [:]),
            data: Data(repeating: 1, count: size))
    }

    @Test("the in-memory cache evicts the least recently used entries past its capacity")
    func eviction() throws {
        let cache = InMemoryResponseCache(capacity: 1000)
        let entry = Self.entry
        let a = Request(url: URL(string: "http://127.0.0.1/a")!)
        let b = Request(url: URL(string: "http://127.0.0.1/b")!)
        let c = Request(url: URL(string: "http://127.0.0.1/c")!)
        cache.storeCachedResponse(entry(400), for: a)
        cache.storeCachedResponse(entry(400), for: b)
        #expect(cache.currentSize == 800)
        _ = cache.cachedResponse(for: a)  // b is now the least recently used
        cache.storeCachedResponse(entry(400), for: c)
        #expect(cache.cachedResponse(for: b) == nil)
        #expect(cache.cachedResponse(for: a) != nil)
        #expect(cache.cachedResponse(for: c) != nil)
        #expect(cache.currentSize == 800)
        cache.storeCachedResponse(entry(2000), for: a)  // larger than the whole cache: not kept, old one gone
        #expect(cache.cachedResponse(for: a) == nil)
        #expect(cache.currentSize == 400)
        cache.removeCachedResponse(for: c)
        #expect(cache.count == 0 && cache.currentSize == 0)
        cache.storeCachedResponse(entry(10), for: a)
        cache.removeAllCachedResponses()
        #expect(cache.count == 0)
    }

    @Test("an in-memory cache emptied by a removal, an oversized store or removeAll finds the next store at once")
    func emptiedCacheFindsNextStore() {
        let cache = InMemoryResponseCache(capacity: 1000)
        let entry = Self.entry
        let a = Request(url: URL(string: "http://127.0.0.1/a")!)
        let b = Request(url: URL(string: "http://127.0.0.1/b")!)
        cache.removeCachedResponse(for: a)  // empty: nothing to do
        #expect(cache.cachedResponse(for: a) == nil)
        let emptyings: [(String, () -> Void)] = [
            ("removal", { cache.removeCachedResponse(for: a) }),
            ("oversized store", { cache.storeCachedResponse(entry(5000), for: a) }),
            ("removeAll", { cache.removeAllCachedResponses() }),
        ]
        for (name, empty) in emptyings {
            cache.storeCachedResponse(entry(10), for: a)
            #expect(cache.cachedResponse(for: a)?.data.count == 10, "before the \(name)")
            empty()
            #expect(cache.count == 0, "after the \(name)")
            #expect(cache.cachedResponse(for: a) == nil, "after the \(name)")
            cache.storeCachedResponse(entry(20), for: b)
            #expect(cache.cachedResponse(for: b)?.data.count == 20, "a store after the \(name)")
            cache.removeCachedResponse(for: b)
            #expect(cache.cachedResponse(for: b) == nil)
        }
    }

    @Test("stores and removals from many threads at once: every entry still stored is found, every removed one is gone")
    func concurrentStoresAndRemovals() {
        let cache = InMemoryResponseCache(capacity: 1 << 20)
        let requests = (0..<64).map { Request(url: URL(string: "http://127.0.0.1/\($0)")!) }
        let response = HTTPResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: 200, headers: [:])
        DispatchQueue.concurrentPerform(iterations: requests.count) { index in
            for round in 0..<50 {
                cache.storeCachedResponse(
                    CachedResponse(response: response, data: Data([UInt8(index), UInt8(round)])), for: requests[index])
                // Odd keys end removed, even keys end stored with their last round.
                if index % 2 == 1 || round < 49 { cache.removeCachedResponse(for: requests[index]) }
            }
        }
        for (index, request) in requests.enumerated() {
            let found = cache.cachedResponse(for: request)
            #expect(found?.data == (index % 2 == 0 ? Data([UInt8(index), 49]) : nil), "key \(index)")
        }
        #expect(cache.count == 32)
    }

    @Test("freshness: max-age wins over Expires, Age counts, invalid Expires is stale")
    func freshnessRules() {
        let url = URL(string: "http://127.0.0.1/")!
        let now = Date()
        func fresh(_ headers: HTTPHeaders, storedAgo: TimeInterval) -> Bool {
            ResponseCachePolicy.isFresh(
                CachedResponse(
                    response: HTTPResponse(url: url, statusCode: 200, headers: headers),
                    data: Data(), storageDate: now.addingTimeInterval(-storedAgo)),
                now: now)
        }
        #expect(fresh(["Cache-Control": "max-age=60"], storedAgo: 30))
        #expect(!fresh(["Cache-Control": "max-age=60"], storedAgo: 61))
        #expect(!fresh(["Cache-Control": "max-age=60", "Age": "40"], storedAgo: 30))
        #expect(fresh(["Cache-Control": "public, max-age=60", "Expires": "0"], storedAgo: 30))
        #expect(!fresh(["Expires": "0"], storedAgo: 0))
        #expect(!fresh([:], storedAgo: 0))
        // Expires minus Date, in the obsolete formats too (an old Date also makes the response old: see
        // ResponseCachePolicyTests for the age).
        func lifetime(_ headers: HTTPHeaders) -> TimeInterval? {
            ResponseCachePolicy.freshnessLifetime(
                of: HTTPResponse(url: url, statusCode: 200, headers: headers), storedAt: now)
        }
        #expect(
            lifetime(["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Expires": "Sunday, 06-Nov-94 08:59:37 GMT"]) == 600)
        #expect(lifetime(["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Expires": "Sun Nov  6 08:59:37 1994"]) == 600)
    }

    /// A session with an in-memory cache and `configure`'s other settings.
    private static func fixture(
        _ configure: (inout SessionConfiguration) -> Void
    ) async throws -> (SessionFixture, InMemoryResponseCache) {
        let cache = InMemoryResponseCache()
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        configure(&configuration)
        return (
            try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer()), cache
        )
    }

    @Test("only-if-cached: a fresh entry answers; no entry, or a stale one, gets 504 without the network")
    func onlyIfCached() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60")
        let onlyIfCached = Request(url: url, headers: ["Cache-Control": "only-if-cached"])
        let (_, missed) = try await Self.run(fixture, onlyIfCached, completions: 1)
        #expect(missed.response?.statusCode == 504)
        #expect(fixture.server.requestCount == 0)
        _ = try await Self.run(fixture, Request(url: url), completions: 2)
        #expect(cache.count == 1)
        let (_, served) = try await Self.run(fixture, onlyIfCached, completions: 3)
        #expect(served.response?.statusCode == 200)
        #expect(fixture.server.requestCount == 1)
        // Stale, with a validator: a request of its own would revalidate it; this one may not ask.
        let staleURL = fixture.server.url("/headers?Cache-Control=max-age%3D0&ETag=%22v1%22")
        _ = try await Self.run(fixture, Request(url: staleURL), completions: 4)
        #expect(cache.count == 2)
        let (_, stale) = try await Self.run(
            fixture, Request(url: staleURL, headers: ["Cache-Control": "only-if-cached"]), completions: 5)
        #expect(stale.response?.statusCode == 504)
        #expect(fixture.server.requestCount == 2)
        // Another method: the cache answers none, and the request may not go out either. Before, it did.
        for method in ["HEAD", "POST"] {
            let (_, other) = try await Self.run(
                fixture, Request(url: url, method: method, headers: ["Cache-Control": "only-if-cached"]),
                completions: method == "HEAD" ? 6 : 7)
            #expect(other.response?.statusCode == 504, "\(method)")
        }
        #expect(fixture.server.requestCount == 2)
        try await fixture.tearDown()
    }

    @Test("a stored redirect is not served to a session that follows redirects: the network answers, and is followed")
    func storedRedirectFollowed() async throws {
        let (fixture, cache) = try await Self.fixture()
        let target = fixture.server.url("/headers?X-Target=1")
        let encoded = try #require(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let origin = Request(url: fixture.server.url("/redirect-to?url=\(encoded)&status=301"))
        // Stored by a session that doesn't follow redirects (or whose redirection hook declined this one).
        cache.storeCachedResponse(
            CachedResponse(
                response: HTTPResponse(
                    url: origin.url, statusCode: 301,
                    headers: ["Location": target.absoluteString, "Cache-Control": "max-age=600"]),
                data: Data()),
            for: origin)
        let (_, call) = try await Self.run(fixture, origin, completions: 1)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        #expect(call.response?.headers["X-Target"] == "1")
        #expect(fixture.server.requests(forPath: "/redirect-to").count == 1)
        try await fixture.tearDown()
    }

    @Test("a stored response's Set-Cookie is not taken again when it is served: a removed cookie stays removed")
    func cachedSetCookieNotReplayed() async throws {
        let (fixture, cache) = try await Self.fixture()
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60&Set-Cookie=sid%3Dabc"))
        _ = try await Self.run(fixture, request, completions: 1)
        #expect(cache.count == 1)
        #expect(fixture.session.cookieStore.allCookies.map(\.name) == ["sid"])
        fixture.session.cookieStore.removeAll()
        let second = try await Self.run(fixture, request, completions: 2)
        #expect(fixture.server.requestCount == 1)
        #expect(second.call.response?.headers["Set-Cookie"] == "sid=abc")
        #expect(fixture.session.cookieStore.allCookies.isEmpty)
        try await fixture.tearDown()
    }

    /// Where an `Authorization` field can come from besides the request itself.
    enum AuthorizationSource: CaseIterable, Sendable {
        case sessionHeaders
        case adapter
    }

    @Test(
        "an Authorization field the session adds (its headers, an interceptor's adapter) keeps the answer out",
        arguments: AuthorizationSource.allCases)
    func addedAuthorizationNotStored(source: AuthorizationSource) async throws {
        let (fixture, cache) = try await Self.fixture { configuration in
            if source == .sessionHeaders { configuration.httpAdditionalHeaders = ["Authorization": "Bearer t0ken"] }
        }
        if source == .adapter {
            fixture.session.interceptor = Interceptor(adapt: { request, _ in
                var adapted = request
                adapted.headers.replaceOrAdd(name: "Authorization", value: "Bearer fresh-token")
                return adapted
            })
        }
        let request = Request(url: fixture.server.url("/headers?Cache-Control=max-age%3D60"))
        _ = try await Self.run(fixture, request, completions: 1)
        _ = try await Self.run(fixture, request, completions: 2)
        #expect(cache.count == 0)
        #expect(fixture.server.requestCount == 2)
        try await fixture.tearDown()
    }

    @Test("a response that varies on a field the session adds is kept with the value sent, and served only to it")
    func varyOnSessionField() async throws {
        let (fixture, cache) = try await Self.fixture { $0.httpAdditionalHeaders = ["X-Tenant": "blue"] }
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60&Vary=X-Tenant")
        _ = try await Self.run(fixture, Request(url: url), completions: 1)
        #expect(cache.count == 1)
        #expect(cache.cachedResponse(for: Request(url: url))?.varyingRequestHeaders["X-Tenant"] == "blue")
        // The same session sends the same field: served from the cache.
        _ = try await Self.run(fixture, Request(url: url), completions: 2)
        #expect(fixture.server.requestCount == 1)
        // A request of its own with another value is not served the blue answer.
        _ = try await Self.run(fixture, Request(url: url, headers: ["X-Tenant": "red"]), completions: 3)
        #expect(fixture.server.requestCount == 2)
        try await fixture.tearDown()
    }

    @Test("a response that varies on Cookie, when the session sent its cookies, is not stored")
    func varyOnSessionCookiesNotStored() async throws {
        let (fixture, cache) = try await Self.fixture()
        let url = fixture.server.url("/headers?Cache-Control=max-age%3D60&Vary=Cookie&Set-Cookie=user%3Dann")
        _ = try await Self.run(fixture, Request(url: url), completions: 1)
        _ = try await Self.run(fixture, Request(url: url), completions: 2)
        #expect(cache.count == 0)
        #expect(fixture.server.requestCount == 2)
        try await fixture.tearDown()
    }

    @Test("a stale entry's validators don't follow a redirect: the target's answer, not the stored body, completes")
    func revalidationDoesNotCrossRedirects() async throws {
        let (fixture, cache) = try await Self.fixture()
        let target = fixture.server.url("/headers?ETag=%22x%22&X-Served=target")
        let encoded = try #require(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let origin = Request(url: fixture.server.url("/redirect-to?url=\(encoded)"))
        cache.storeCachedResponse(
            CachedResponse(
                response: HTTPResponse(
                    url: origin.url, statusCode: 200, headers: ["Cache-Control": "max-age=60", "ETag": "\"x\""]),
                data: Data("stale".utf8), storageDate: Date(timeIntervalSinceNow: -120)),
            for: origin)
        let result = try await Self.run(fixture, origin, completions: 1)
        // The redirect was asked with the validators; its target without them, and it answered in full.
        let redirect = try #require(fixture.server.requests(forPath: "/redirect-to").first)
        #expect(redirect.headerValue("If-None-Match") == "\"x\"")
        let followed = try #require(fixture.server.requests(forPath: "/headers").first)
        #expect(followed.headerValue("If-None-Match") == nil)
        #expect(followed.responseStatus == 200)
        #expect(result.call.error == nil)
        #expect(result.call.response?.statusCode == 200)
        #expect(result.call.response?.headers["X-Served"] == "target")
        #expect(result.call.object as? Data != Data("stale".utf8))
        try await fixture.tearDown()
    }

    @Test("the answer at the end of a redirect is not stored under the URL that redirected")
    func redirectTargetNotStoredUnderOrigin() async throws {
        let (fixture, cache) = try await Self.fixture()
        let target = fixture.server.url("/headers?Cache-Control=max-age%3D60")
        let origin = fixture.server.url(
            "/redirect-to?url=\(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        _ = try await Self.run(fixture, Request(url: origin), completions: 1)
        #expect(cache.cachedResponse(for: Request(url: origin)) == nil)
        _ = try await Self.run(fixture, Request(url: origin), completions: 2)
        #expect(fixture.server.requests(forPath: "/redirect-to").count == 2)
        try await fixture.tearDown()
    }
}
