import Foundation
import Herald
import Testing

/// The cookie store's RFC 6265 rules as pure functions: no traffic, any domain.
@Suite("Cookie store rules")
struct CookieStoreTests {
    @Test("a host-only cookie goes back to its host alone; a Domain cookie to the domain and its subdomains")
    func domainMatching() {
        let store = CookieStore()
        store.store(
            setCookieFields: ["host=1", "wide=2; Domain=example.com"], from: testURL("http://www.example.com/"))
        #expect(store.cookieHeader(for: testURL("http://www.example.com/")) == "host=1; wide=2")
        #expect(store.cookieHeader(for: testURL("http://a.b.example.com/")) == "wide=2")
        #expect(store.cookieHeader(for: testURL("http://example.com/")) == "wide=2")
        #expect(store.cookieHeader(for: testURL("http://notexample.com/")) == nil)
        #expect(store.cookieHeader(for: testURL("http://example.org/")) == nil)
        // A Domain the host is not inside is refused.
        store.store(setCookieFields: ["other=3; Domain=example.org"], from: testURL("http://www.example.com/"))
        #expect(store.cookieHeader(for: testURL("http://www.example.org/")) == nil)
    }

    @Test("domain matching as a pure function: suffixes on a label boundary, never for IP addresses")
    func domainMatchFunction() {
        #expect(CookieRules.domainMatches("www.example.com", "example.com"))
        #expect(CookieRules.domainMatches("example.com", "example.com"))
        #expect(!CookieRules.domainMatches("badexample.com", "example.com"))
        #expect(!CookieRules.domainMatches("10.0.0.1", "0.0.1"))
        #expect(CookieRules.domainMatches("127.0.0.1", "127.0.0.1"))
    }

    @Test("path matching and the default path of a response without Path")
    func paths() {
        #expect(CookieRules.pathMatches("/docs/web", "/docs"))
        #expect(CookieRules.pathMatches("/docs/", "/docs/"))
        #expect(CookieRules.pathMatches("/docs", "/docs"))
        #expect(!CookieRules.pathMatches("/docsets", "/docs"))
        #expect(!CookieRules.pathMatches("/", "/docs"))
        #expect(CookieRules.defaultPath(for: testURL("http://h.example/a/b/c")) == "/a/b")
        #expect(CookieRules.defaultPath(for: testURL("http://h.example/a")) == "/")
        #expect(CookieRules.defaultPath(for: testURL("http://h.example")) == "/")

        let store = CookieStore()
        store.store(
            setCookieFields: ["dir=1", "root=2; Path=/", "deep=3; Path=/app/admin"],
            from: testURL("http://h.example/app/login"))
        // Longer paths first.
        #expect(store.cookieHeader(for: testURL("http://h.example/app/admin/users")) == "deep=3; dir=1; root=2")
        #expect(store.cookieHeader(for: testURL("http://h.example/app")) == "dir=1; root=2")
        #expect(store.cookieHeader(for: testURL("http://h.example/other")) == "root=2")
    }

    @Test("a Secure cookie is sent only over https, and one set over http is refused")
    func secure() {
        let store = CookieStore()
        store.store(setCookieFields: ["token=abc; Secure"], from: testURL("https://api.example.com/"))
        #expect(store.cookieHeader(for: testURL("https://api.example.com/")) == "token=abc")
        #expect(store.cookieHeader(for: testURL("http://api.example.com/")) == nil)
        let stored = store.store(setCookieFields: ["spoof=1; Secure"], from: testURL("http://api.example.com/"))
        #expect(stored.isEmpty)
        #expect(store.allCookies.map(\.name) == ["token"])
    }

    @Test("public suffixes are refused as cookie domains; a suffix that is the host itself is host-only")
    func publicSuffixes() {
        let store = CookieStore()
        #expect(
            store.store(setCookieFields: ["a=1; Domain=co.uk"], from: testURL("http://www.example.co.uk/")).isEmpty)
        #expect(store.store(setCookieFields: ["b=1; Domain=com"], from: testURL("http://example.com/")).isEmpty)
        #expect(store.store(setCookieFields: ["c=1; Domain=.uk"], from: testURL("http://www.example.co.uk/")).isEmpty)
        let allowed = store.store(
            setCookieFields: ["d=1; Domain=example.co.uk"], from: testURL("http://www.example.co.uk/"))
        #expect(allowed.map(\.domain) == ["example.co.uk"])
        let own = store.store(setCookieFields: ["e=1; Domain=github.io"], from: testURL("https://github.io/"))
        #expect(own.first?.isHostOnly == true)
        #expect(store.cookieHeader(for: testURL("https://someone.github.io/")) == nil)
    }

    @Test("the system list from Debian's publicsuffix package is read at run time")
    func systemList() throws {
        let list = PublicSuffixList.shared
        #expect(
            list.source == .file(PublicSuffixList.systemListPath),
            "install Debian's publicsuffix package (make deps) for \(PublicSuffixList.systemListPath)")
        #expect(list.count > 5000)
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("github.io"))
        #expect(!list.isPublicSuffix("example.com"))
        #expect(!list.isPublicSuffix("example.co.uk"))
    }

    @Test("rules, wildcards and exceptions of the list's format; the built-in fallback")
    func listFormat() {
        let list = PublicSuffixList(rules: "// comment\ncom\n*.ck\n!www.ck\n\nco.uk  trailing\n", source: .builtIn)
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("anything.ck"))
        #expect(!list.isPublicSuffix("www.ck"))
        #expect(list.isPublicSuffix("zz"))  // the implicit * rule
        #expect(!list.isPublicSuffix("example.com"))
        #expect(PublicSuffixList.builtIn.isPublicSuffix("co.uk"))
        #expect(PublicSuffixList.builtIn.source == .builtIn)
        #expect(throws: HeraldError.self) { try PublicSuffixList(contentsOf: "/nonexistent/public_suffix_list.dat") }
    }

    @Test("Max-Age wins over Expires; Max-Age=0 and a past Expires remove the cookie; HttpOnly and SameSite are kept")
    func expiryAndAttributes() throws {
        let store = CookieStore()
        let url = testURL("http://h.example/")
        store.store(
            setCookieFields: [
                "a=1; Max-Age=3600; Expires=Wed, 21 Oct 2015 07:28:00 GMT; HttpOnly; SameSite=Strict",
                "b=2; Expires=Wed, 21 Oct 2099 07:28:00 GMT; SameSite=lax",
                "c=3",
            ], from: url)
        let a = try #require(store.allCookies.first { $0.name == "a" })
        let expiry = try #require(a.expiresAt)
        #expect(abs(expiry.timeIntervalSinceNow - 3600) < 60)
        #expect(a.isHTTPOnly && a.sameSite == .strict)
        let b = try #require(store.allCookies.first { $0.name == "b" })
        #expect(b.expiresAt == RetryAfter.httpDate("Wed, 21 Oct 2099 07:28:00 GMT"))
        #expect(b.sameSite == .lax && !b.isHTTPOnly)
        #expect(store.allCookies.first { $0.name == "c" }?.expiresAt == nil)

        store.store(setCookieFields: ["a=gone; Max-Age=0", "b=gone; Expires=Thu, 01 Jan 1970 00:00:01 GMT"], from: url)
        #expect(store.cookieHeader(for: url) == "c=3")
    }

    @Test("malformed fields are ignored: no '=', an empty name, control characters, an oversized value")
    func malformed() {
        let store = CookieStore()
        let stored = store.store(
            setCookieFields: ["novalue", "=x", "a=b\u{7}c", "big=" + String(repeating: "x", count: 5000), "ok=1"],
            from: testURL("http://h.example/"))
        #expect(stored.map(\.name) == ["ok"])
    }

    @Test("the Cookie field stays within 8,190 bytes and 150 cookies; the longest-path cookies go first")
    func cookieHeaderIsBounded() throws {
        let store = CookieStore()
        let url = testURL("https://api.h.example/a/b")
        let big = String(repeating: "v", count: 4000)
        for index in 0..<5 {
            store.setCookie(Cookie(name: "big\(index)", value: big, domain: "h.example", isHostOnly: false))
        }
        store.setCookie(Cookie(name: "deep", value: "1", domain: "api.h.example", path: "/a/b"))
        let header = try #require(store.cookieHeader(for: url))
        #expect(header.utf8.count <= CookieStore.maximumCookieHeaderLength)
        #expect(header.hasPrefix("deep=1; big"))
        // Two 4 KB cookies fit beside `deep`, a third doesn't.
        #expect(header.split(separator: ";").count == 3)

        // 200 matching cookies: 50 (the most a domain keeps) for each of four domains of the host.
        let many = CookieStore()
        for domain in ["h.example", "sub.h.example", "x.sub.h.example", "y.x.sub.h.example"] {
            for index in 0..<50 {
                many.setCookie(Cookie(name: "c\(index)", value: "1", domain: domain, isHostOnly: false))
            }
        }
        #expect(many.cookies(for: testURL("https://y.x.sub.h.example/")).count == 200)
        let manyHeader = try #require(many.cookieHeader(for: testURL("https://y.x.sub.h.example/")))
        #expect(manyHeader.split(separator: ";").count == CookieStore.maximumCookiesPerRequest)
    }

    @Test("changes from two threads at once: after flush the file holds what the store holds, every round")
    func concurrentChangesEndInTheFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cookies-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let store = try CookieStore(persistingTo: file)
        let expiry = Date().addingTimeInterval(3600)
        for round in 0..<300 {
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<6 {
                    group.addTask {
                        if writer == 0 { return store.removeAll() }
                        store.setCookie(
                            Cookie(name: "c\(round)-\(writer)", value: "1", domain: "h.example", expiresAt: expiry))
                    }
                }
            }
            store.flush()
            let reloaded = try CookieStore(persistingTo: file)
            #expect(Set(reloaded.allCookies.map(\.name)) == Set(store.allCookies.map(\.name)), "round \(round)")
        }
    }

    @Test("a persistent store writes JSON lines of its persistent cookies and reads them back")
    func persistence() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cookies-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let store = try CookieStore(persistingTo: file)
        store.store(
            setCookieFields: ["kept=1; Max-Age=600; Secure; HttpOnly; SameSite=None", "session=2"],
            from: testURL("https://h.example/"))
        store.flush()
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["name"] as? String == "kept")
        #expect(object["domain"] as? String == "h.example")
        #expect(object["isSecure"] as? Bool == true)
        #expect(object["sameSite"] as? String == "None")
        #expect(object["expiresAt"] is Double)

        let reloaded = try CookieStore(persistingTo: file)
        #expect(reloaded.allCookies.map(\.name) == ["kept"])
        #expect(reloaded.cookieHeader(for: testURL("https://h.example/x")) == "kept=1")

        try Data("{\"name\":\"broken\"}\n".utf8).write(to: file)
        let error = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: file) }
        #expect(error?.code == .fileIO)
        #expect(error?.message.contains("Line 1") == true)
    }

    @Test("at most 50 cookies per domain: the oldest go first")
    func limits() {
        let store = CookieStore()
        for index in 0..<60 {
            store.setCookie(
                Cookie(
                    name: "c\(index)", value: "v", domain: "h.example",
                    creationDate: Date(timeIntervalSince1970: TimeInterval(1_000_000 + index))))
        }
        let names = Set(store.allCookies.map(\.name))
        #expect(names.count == CookieStore.maximumCookiesPerDomain)
        #expect(!names.contains("c0") && names.contains("c59"))
    }
}
