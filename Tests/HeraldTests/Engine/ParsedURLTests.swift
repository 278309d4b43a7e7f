import CCurl
import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

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

    @Test("a session's requests to the URL of the one before share its parse, unless it names a credential")
    func sessionKeepsTheLastParse() throws {
        let pool = EasyHandlePool(capacity: 4)
        let first = try #require(pool.parsedURL(for: "http://127.0.0.1:8080/a?b=1"))
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a?b=1") === first)
        let other = try #require(pool.parsedURL(for: "http://127.0.0.1:8080/a?b=2"))
        #expect(other !== first)
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a?b=2") === other)
        #expect(pool.parsedURL(for: "http://127.0.0.1:99999/") == nil)
        #expect(pool.parsedURL(for: "http://127.0.0.1:8080/a?b=2") === other)
        for secret in ["http://user:pw@127.0.0.1:8080/a", "http://user@127.0.0.1:8080/a", "http://:pw@127.0.0.1/"] {
            let parsed = try #require(pool.parsedURL(for: secret))
            #expect(parsed.namesCredential)
            #expect(pool.parsedURL(for: secret) !== parsed)
        }
        #expect(try #require(ParsedURL("http://127.0.0.1:8080/a")).namesCredential == false)
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
