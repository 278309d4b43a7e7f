import CCurl
import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

/// A transfer hands libcurl its URL already parsed (`CURLOPT_CURLU`), made where the transfer is prepared;
/// libcurl's own parser decides what a URL is either way.
@Suite("The URL parsed before the transfer starts", .timeLimit(.minutes(1)))
struct ParsedURLTests {
    /// A part of `url` as libcurl reports it, or `nil` when it has none.
    private static func part(_ url: ParsedURL, _ which: CURLUPart) -> String? {
        var text: UnsafeMutablePointer<CChar>?
        guard curl_url_get(url.handle, which, &text, 0) == CURLUE_OK, let text else { return nil }
        defer { curl_free(text) }
        return String(cString: text)
    }

    @Test("a URL is split into the parts libcurl sends")
    func parts() throws {
        let url = try #require(ParsedURL("http://user:secret@127.0.0.1:8080/a/b%20c?d=1&e=2#top"))
        #expect(Self.part(url, CURLUPART_SCHEME) == "http")
        #expect(Self.part(url, CURLUPART_USER) == "user")
        #expect(Self.part(url, CURLUPART_PASSWORD) == "secret")
        #expect(Self.part(url, CURLUPART_HOST) == "127.0.0.1")
        #expect(Self.part(url, CURLUPART_PORT) == "8080")
        #expect(Self.part(url, CURLUPART_PATH) == "/a/b%20c")
        #expect(Self.part(url, CURLUPART_QUERY) == "d=1&e=2")
        #expect(Self.part(url, CURLUPART_FRAGMENT) == "top")
    }

    @Test(
        "what libcurl's parser refuses gives no parsed URL", arguments: ["http://127.0.0.1:99999/", "http://[::1/", ""])
    func refused(text: String) {
        #expect(ParsedURL(text) == nil)
    }

    @Test(
        "a session's requests to the URL of the one before share its parse, unless it names a credential or has a query"
    )
    func sessionKeepsTheLastParse() throws {
        let pool = EasyHandlePool(capacity: 4)
        let first = try #require(pool.parsedURL(for: "http://127.0.0.1:8080/a/b"))
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a/b") === first)
        let other = try #require(pool.parsedURL(for: "http://127.0.0.1:8080/a/c"))
        #expect(other !== first)
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a/c") === other)
        #expect(pool.parsedURL(for: "http://127.0.0.1:99999/") == nil)
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a/c") === other)
        let kept = [
            "http://user:pw@127.0.0.1:8080/a", "http://user@127.0.0.1:8080/a", "http://:pw@127.0.0.1/",
            "http://127.0.0.1:8080/a?token=secret", "http://127.0.0.1:8080/a?",
        ]
        for text in kept {
            let parsed = try #require(pool.parsedURL(for: text))
            #expect(parsed.namesCredential || parsed.hasQuery)
            #expect(pool.parsedURL(for: text) !== parsed)
        }
        let plain = try #require(ParsedURL("http://127.0.0.1:8080/a"))
        #expect(!plain.namesCredential && !plain.hasQuery)
    }

    @Test(
        "the response's URL is the request's as libcurl writes it back",
        arguments: [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
            ("http://127.0.0.1:8080/a/../b/./c", "http://127.0.0.1:8080/b/c"),
            ("HTTP://127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
            ("http://127.0.0.1:8080/a?b=1", nil),
        ])
    func effectiveURL(text: String, written: String?) throws {
        let parsed = try #require(ParsedURL(text))
        #expect(parsed.effectiveURL?.absoluteString == written)
    }

    @Test("requests one after another on a pooled handle each go to their own URL and report it")
    func pooledHandleTakesEachURL() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let targets = ["/json?n=1", "/json?n=2", "/json?q=a%20b", "/headers?X-Step=4", "/json"]
        for target in targets {
            let url = server.url(target)
            let done = OneShot<(Int, URL?, HeraldError?)>()
            try session.dataTask(with: Request(url: url)) { response, _, error in
                done.send((response?.statusCode ?? 0, response?.url, error))
            }.resume()
            let (status, responseURL, error) = try await done.value(timeout: .seconds(10))
            #expect(error == nil, "\(target)")
            #expect(status == 200)
            #expect(responseURL == url)
        }
        #expect(server.requests.map(\.uri) == targets)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a URL with dot segments is sent without them, and its response names the URL sent")
    func dotSegments() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let done = OneShot<(Int, URL?)>()
        try session.dataTask(with: Request(url: server.url("/x/../json"))) { response, _, _ in
            done.send((response?.statusCode ?? 0, response?.url))
        }.resume()
        let (status, url) = try await done.value(timeout: .seconds(10))
        #expect(status == 200)
        #expect(url == server.url("/json"))
        #expect(server.requests.map(\.uri) == ["/json"])
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a URL libcurl refuses fails its task with bad URL, and the next request on the session works")
    func refusedURLFailsTheTask() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let bad = try #require(URL(string: "http://127.0.0.1:99999/json"))
        let failed = OneShot<HeraldError?>()
        try session.dataTask(with: Request(url: bad)) { _, _, error in failed.send(error) }.resume()
        let error = try await failed.value(timeout: .seconds(10))
        #expect(error?.code == .badURL)
        let next = OneShot<Int>()
        try session.dataTask(with: Request(url: server.url("/json"))) { response, _, _ in
            next.send(response?.statusCode ?? 0)
        }.resume()
        #expect(try await next.value(timeout: .seconds(10)) == 200)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
