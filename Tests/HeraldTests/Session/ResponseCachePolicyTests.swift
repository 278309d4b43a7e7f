import Foundation
@testable import Herald
import HeraldTesting
import Testing

/// The RFC 9111 rules of ``ResponseCachePolicy``, one by one, without a server: what is stored, how old and
/// how fresh an entry is, when it is served, revalidated or invalidated.
@Suite("Response cache policy (RFC 9111)")
struct ResponseCachePolicyTests {
    private static let url = URL(string: "http://127.0.0.1:8080/resource")!
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private static func response(_ status: Int = 200, _ headers: [(String, String)]) -> HTTPResponse {
        HTTPResponse(url: url, statusCode: status, headers: HTTPHeaders(headers))
    }

    /// The entry a `GET` with `requestHeaders` answered by `response` would store at `now`, or `nil`.
    private static func proposal(
        _ response: HTTPResponse, requestHeaders: [(String, String)] = [], method: String = "GET"
    ) -> CachedResponse? {
        let request = Request(url: url, method: method, headers: HTTPHeaders(requestHeaders))
        let outcome = TaskOutcome(response: response, body: Data("body".utf8), error: nil, metrics: nil)
        return ResponseCachePolicy.proposal(for: request, outcome: outcome, now: now)
    }

    /// What a lookup finds for a `GET` with `requestHeaders` at `now + elapsed`, `entry` stored at `now`.
    private static func lookup(
        _ entry: CachedResponse, after elapsed: TimeInterval = 0, requestHeaders: [(String, String)] = []
    ) -> ResponseCachePolicy.Lookup? {
        let cache = InMemoryResponseCache()
        let request = Request(url: url, headers: HTTPHeaders(requestHeaders))
        cache.storeCachedResponse(entry, for: request)
        return ResponseCachePolicy.lookup(for: request, in: cache, now: now.addingTimeInterval(elapsed))
    }

    private static func kind(_ lookup: ResponseCachePolicy.Lookup?) -> String {
        switch lookup {
        case .fresh: "fresh"
        case .staleWhileRevalidate: "stale-while-revalidate"
        case .stale: "revalidate"
        case nil: "miss"
        }
    }

    @Test("a non-error answer to an unsafe method invalidates its URL and same-origin Location/Content-Location")
    func invalidation() {
        let other = URL(string: "http://127.0.0.1:8080/other")!
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let request = Request(url: Self.url, method: method)
            let answer = Self.response(201, [("Location", "/other"), ("Content-Location", "http://elsewhere/x")])
            #expect(ResponseCachePolicy.invalidatedURLs(for: request, response: answer) == [Self.url, other])
            #expect(ResponseCachePolicy.invalidatedURLs(for: request, response: Self.response(303, [])) == [Self.url])
            #expect(ResponseCachePolicy.invalidatedURLs(for: request, response: Self.response(500, [])).isEmpty)
            #expect(ResponseCachePolicy.invalidatedURLs(for: request, response: nil).isEmpty)
        }
        for method in ["GET", "HEAD", "OPTIONS", "TRACE"] {
            let request = Request(url: Self.url, method: method)
            #expect(ResponseCachePolicy.invalidatedURLs(for: request, response: Self.response(200, [])).isEmpty)
        }
        // The scheme's default port written out is the same origin: before, `:443` and none differed, and the
        // created item's stored GET stayed.
        let https = URL(string: "https://api.example/items")!
        let created = HTTPResponse(
            url: https, statusCode: 201, headers: ["Location": "https://api.example:443/items/7"])
        let invalidated = ResponseCachePolicy.invalidatedURLs(
            for: Request(url: https, method: "POST"), response: created)
        #expect(invalidated.map(\.absoluteString) == ["https://api.example/items", "https://api.example:443/items/7"])
    }

    @Test("a validator holding a line break is not sent back: it would split the conditional request")
    func validatorWithLineBreak() {
        let split = HTTPResponse(
            url: Self.url, statusCode: 200,
            headers: ["ETag": "\"a\"\rX-Injected: 1", "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"])
        let validators = ResponseCachePolicy.validators(of: split)
        #expect(validators["If-None-Match"] == nil)
        #expect(validators["If-Modified-Since"] == "Wed, 21 Oct 2015 07:28:00 GMT")
        let plain = HTTPResponse(url: Self.url, statusCode: 200, headers: ["ETag": "\"a\""])
        #expect(ResponseCachePolicy.validators(of: plain)["If-None-Match"] == "\"a\"")
    }

    @Test("Vary: the named request fields are kept and must match; Vary: * is not stored")
    func vary() throws {
        let response = Self.response(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language, Foo")])
        let entry = try #require(
            Self.proposal(response, requestHeaders: [("Accept-Language", "en"), ("Foo", "1"), ("Bar", "x")]))
        #expect(entry.varyingRequestHeaders == HTTPHeaders([("accept-language", "en"), ("foo", "1")]))
        #expect(Self.kind(Self.lookup(entry, requestHeaders: [("Accept-Language", "en"), ("Foo", "1")])) == "fresh")
        #expect(Self.kind(Self.lookup(entry, requestHeaders: [("accept-language", " en"), ("FOO", "1")])) == "fresh")
        #expect(Self.kind(Self.lookup(entry, requestHeaders: [("Accept-Language", "fr"), ("Foo", "1")])) == "miss")
        #expect(Self.kind(Self.lookup(entry, requestHeaders: [("Accept-Language", "en")])) == "miss")
        #expect(Self.proposal(Self.response(200, [("Cache-Control", "max-age=60"), ("Vary", "Foo, *")])) == nil)
    }

    @Test("no-cache responses are stored when they have a validator, and always revalidated")
    func noCacheStoredForRevalidation() throws {
        let headers = [("Cache-Control", "no-cache, max-age=3600"), ("ETag", #""v1""#)]
        let entry = try #require(Self.proposal(Self.response(200, headers)))
        guard case .stale(_, let validators) = Self.lookup(entry) else {
            Issue.record("a no-cache entry must be revalidated")
            return
        }
        #expect(validators["If-None-Match"] == #""v1""#)
        #expect(Self.proposal(Self.response(200, [("Cache-Control", "no-cache")])) == nil)
    }

    @Test(
        "final statuses other than 206 and 304 are stored with explicit freshness",
        arguments: [200, 203, 204, 300, 301, 302, 307, 308, 400, 404, 405, 410, 414, 500, 501, 503])
    func statusesStored(status: Int) {
        #expect(Self.proposal(Self.response(status, [("Cache-Control", "max-age=60")])) != nil)
    }

    @Test("206, 304 and 1xx answers are never stored, and a 302 without explicit freshness is not either")
    func statusesNotStored() {
        for status in [100, 206, 304] {
            #expect(Self.proposal(Self.response(status, [("Cache-Control", "max-age=60")])) == nil)
        }
        let old = Self.httpDate(Self.now.addingTimeInterval(-86400 * 10))
        #expect(Self.proposal(Self.response(302, [("Last-Modified", old)])) == nil)
        #expect(Self.proposal(Self.response(410, [("Last-Modified", old)])) != nil)
    }

    @Test("heuristic freshness: 10% of the time since Last-Modified, for heuristically cacheable statuses only")
    func heuristicFreshness() throws {
        let lastModified = Self.httpDate(Self.now.addingTimeInterval(-100_000))
        let headers = [("Date", Self.httpDate(Self.now)), ("Last-Modified", lastModified)]
        let lifetime = ResponseCachePolicy.freshnessLifetime(of: Self.response(200, headers), storedAt: Self.now)
        #expect(lifetime == 10_000)
        #expect(ResponseCachePolicy.freshnessLifetime(of: Self.response(302, headers), storedAt: Self.now) == nil)
        let entry = try #require(Self.proposal(Self.response(200, headers)))
        #expect(Self.kind(Self.lookup(entry, after: 9_000)) == "fresh")
        #expect(Self.kind(Self.lookup(entry, after: 11_000)) == "revalidate")
    }

    @Test("the age counts the time from Date to the response's arrival")
    func dateCountsForAge() throws {
        let headers = [("Date", Self.httpDate(Self.now.addingTimeInterval(-7200))), ("Cache-Control", "max-age=3600")]
        let entry = CachedResponse(response: Self.response(200, headers), data: Data(), storageDate: Self.now)
        #expect(ResponseCachePolicy.currentAge(of: entry, now: Self.now) == 7200)
        #expect(!ResponseCachePolicy.isFresh(entry, now: Self.now))
        #expect(Self.proposal(Self.response(200, headers)) == nil)
    }

    @Test(
        "Age: the first member without parameters, ignored unless delta-seconds",
        arguments: [
            (["7200, 0"], 7200), (["0, 7200"], 0), (["7200", "0"], 7200), (["7200;foo=bar"], 7200),
            (["abc"], nil), (["-7200"], nil), (["7200.0"], nil), (["2147483649"], 2_147_483_648),
        ] as [([String], TimeInterval?)])
    func ageParsing(lines: [String], expected: TimeInterval?) {
        #expect(ResponseCachePolicy.ageValue(lines) == expected)
    }

    @Test("a request's max-age, min-fresh and max-stale decide whether a stored response is acceptable")
    func requestDirectives() throws {
        let entry = try #require(
            Self.proposal(Self.response(200, [("Cache-Control", "max-age=100"), ("ETag", #""a""#)])))
        #expect(
            Self.kind(Self.lookup(entry, after: 10, requestHeaders: [("Cache-Control", "max-age=0")]))
                == "revalidate")
        #expect(Self.kind(Self.lookup(entry, after: 10, requestHeaders: [("Cache-Control", "max-age=20")])) == "fresh")
        #expect(
            Self.kind(Self.lookup(entry, after: 10, requestHeaders: [("Cache-Control", "min-fresh=95")]))
                == "revalidate")
        #expect(
            Self.kind(Self.lookup(entry, after: 150, requestHeaders: [("Cache-Control", "max-stale=100")]))
                == "fresh")
        #expect(Self.kind(Self.lookup(entry, after: 150, requestHeaders: [("Cache-Control", "max-stale")])) == "fresh")
        #expect(
            Self.kind(Self.lookup(entry, after: 150, requestHeaders: [("Cache-Control", "max-stale=10")]))
                == "revalidate")
    }

    @Test("a 304 without Date refreshes the entry as received now: fresh again, the first answer's Age gone")
    func refreshWithoutDate() throws {
        let stored = Self.response(
            200,
            [
                ("Date", Self.httpDate(Self.now.addingTimeInterval(-3600))), ("Cache-Control", "max-age=60"),
                ("Age", "30"), ("ETag", #""a""#),
            ])
        let refreshed = ResponseCachePolicy.refreshed(
            stored, with: Self.response(304, [("ETag", #""a""#)]), receivedAt: Self.now)
        #expect(refreshed.headers["Date"] == Self.httpDate(Self.now))
        #expect(refreshed.headers["Age"] == nil)
        let entry = try #require(Self.proposal(refreshed))
        // Before, the hour-old Date made the refreshed entry stale at once: every later request asked the server.
        #expect(Self.kind(Self.lookup(entry, after: 10)) == "fresh")
        #expect(Self.kind(Self.lookup(entry, after: 70)) == "revalidate")
        // A 304 with a Date and an Age of its own: those are the refreshed response's.
        let dated = ResponseCachePolicy.refreshed(
            stored,
            with: Self.response(
                304, [("ETag", #""a""#), ("Date", Self.httpDate(Self.now.addingTimeInterval(-20))), ("Age", "5")]),
            receivedAt: Self.now)
        #expect(dated.headers["Date"] == Self.httpDate(Self.now.addingTimeInterval(-20)))
        #expect(dated.headers["Age"] == "5")
    }

    @Test("a 304 replaces each field it carries, every line of that name, and keeps the others in their order")
    func refreshReplacesByName() {
        let stored = Self.response(
            200,
            [
                ("Date", Self.httpDate(Self.now)), ("X-A", "1"), ("Link", "<a>"), ("X-B", "2"), ("link", "<b>"),
                ("Content-Length", "5"), ("ETag", #""a""#),
            ])
        let refreshed = ResponseCachePolicy.refreshed(
            stored,
            with: Self.response(
                304, [("LINK", "<c>"), ("X-B", "3"), ("Content-Length", "0"), ("Link", "<d>"), ("ETag", #""a""#)]),
            receivedAt: Self.now)
        let fields = refreshed.headers.map { "\($0.name): \($0.value)" }
        #expect(
            fields == [
                "X-A: 1", "Content-Length: 5", "LINK: <c>", "X-B: 3", "Link: <d>", #"ETag: "a""#,
                "Date: \(Self.httpDate(Self.now))",
            ])
    }

    @Test("stale-while-revalidate serves a stale response within its window, then no longer")
    func staleWhileRevalidate() throws {
        let headers = [("Cache-Control", "max-age=1, stale-while-revalidate=60"), ("ETag", #""a""#)]
        let entry = try #require(Self.proposal(Self.response(200, headers)))
        #expect(Self.kind(Self.lookup(entry, after: 30)) == "stale-while-revalidate")
        #expect(Self.kind(Self.lookup(entry, after: 120)) == "revalidate")
        let background = ResponseCachePolicy.backgroundRevalidation(of: Request(url: Self.url))
        #expect(
            Self.kind(Self.lookup(entry, after: 30, requestHeaders: background.headers.map { ($0.name, $0.value) }))
                == "revalidate")
        let mustRevalidate = [("Cache-Control", "max-age=1, stale-while-revalidate=60, must-revalidate")]
        let strict = try #require(Self.proposal(Self.response(200, mustRevalidate + [("ETag", #""a""#)])))
        #expect(Self.kind(Self.lookup(strict, after: 30)) == "revalidate")
    }

    @Test("Expires with a zone other than GMT (any case) is invalid, so the response is already stale")
    func expiresZone() {
        #expect(ResponseCachePolicy.parseDate("Thu, 18 Aug 2050 02:01:18 GMT") != nil)
        #expect(ResponseCachePolicy.parseDate("Thursday, 18-Aug-50 02:01:18 GMT") != nil)
        #expect(ResponseCachePolicy.parseDate("Thu Aug  8 02:01:18 2050") != nil)
        #expect(ResponseCachePolicy.parseDate("Thu, 18 Aug 2050 02:01:18 gMT") != nil)
        #expect(ResponseCachePolicy.parseDate("Thu, 18 Aug 2050 02:01:18 UTC") == nil)
        #expect(ResponseCachePolicy.parseDate("Thu, 18 Aug 2050 02:01:18 AEST") == nil)
        let response = Self.response(200, [("Expires", "Thu, 18 Aug 2050 02:01:18 UTC")])
        #expect(ResponseCachePolicy.freshnessLifetime(of: response, storedAt: Self.now) == 0)
    }

    @Test("an RFC 850 date's two-digit year is the one within 50 years of now: 50 is 2050, 94 is 1994")
    func rfc850Years() throws {
        let fifty = try #require(ResponseCachePolicy.parseDate("Thursday, 18-Aug-50 02:01:18 GMT"))
        #expect(fifty == ResponseCachePolicy.parseDate("Thu, 18 Aug 2050 02:01:18 GMT"))
        let ninetyFour = try #require(ResponseCachePolicy.parseDate("Sunday, 06-Nov-94 08:49:37 GMT"))
        #expect(ninetyFour == ResponseCachePolicy.parseDate("Sun, 06 Nov 1994 08:49:37 GMT"))
    }

    @Test("IMF-fixdates read without a formatter give the formatter's date, and what the formatter refuses is refused")
    func imfFixdateFastPath() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        var generator = SeededGenerator(seed: 0x1AF_0F1C5)
        // 1600-01-01 to 9999-12-31.
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: -11_676_096_000...253_402_300_799, using: &generator)
            let date = Date(timeIntervalSince1970: Double(seconds))
            let text = formatter.string(from: date)
            #expect(ResponseCachePolicy.imfFixdate(text) == date, "\(text)")
            #expect(ResponseCachePolicy.parseDate(text) == date, "\(text)")
        }
        for text in [
            "Mon, 18 Aug 2050 02:01:18 GMT",  // the wrong day of the week: ignored, as the formatter does
            "Thu, 29 Feb 2052 23:59:59 GMT", "Sat, 01 Jan 2000 00:00:00 GMT", "Tue, 29 Feb 2000 12:00:00 GMT",
        ] {
            #expect(ResponseCachePolicy.imfFixdate(text) != nil, "\(text)")
            #expect(ResponseCachePolicy.imfFixdate(text) == formatter.date(from: text), "\(text)")
        }
        for text in [
            "Thu, 31 Feb 2050 02:01:18 GMT", "Thu, 29 Feb 2100 02:01:18 GMT", "Thu, 18 Aug 2050 24:01:18 GMT",
            "Thu, 18 Aug 2050 02:60:18 GMT", "Thu, 18 Aug 2050 02:01:60 GMT", "Thu, 00 Aug 2050 02:01:18 GMT",
        ] {
            #expect(ResponseCachePolicy.imfFixdate(text) == nil, "\(text)")
            #expect(formatter.date(from: text) == nil, "\(text)")
            #expect(ResponseCachePolicy.parseDate(text) == nil, "\(text)")
        }
        // Not the exact layout: left to the formatters, which read these.
        for text in ["thu, 18 aug 2050 02:01:18 GMT", "Thu, 8 Aug 2050 02:01:18 GMT", "Thu, 18 Aug 1500 02:01:18 GMT"] {
            #expect(ResponseCachePolicy.imfFixdate(text) == nil, "\(text)")
            #expect(ResponseCachePolicy.parseDate(text) != nil, "\(text)")
            #expect(ResponseCachePolicy.parseDate(text) == formatter.date(from: text), "\(text)")
        }
    }
}
