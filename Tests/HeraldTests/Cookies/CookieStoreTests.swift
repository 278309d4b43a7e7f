import Foundation
import Herald
import HeraldEngine
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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

    @Test(
        "Max-Age wins over Expires; both are capped at 400 days; Max-Age=0 and a past Expires remove the cookie; HttpOnly and SameSite are kept"
    )
    func expiryAndAttributes() throws {
        let store = CookieStore()
        let url = testURL("http://h.example/")
        store.store(
            setCookieFields: [
                "a=1; Max-Age=3600; Expires=Wed, 21 Oct 2015 07:28:00 GMT; HttpOnly; SameSite=Strict",
                "b=2; Expires=Wed, 21 Oct 2099 07:28:00 GMT; SameSite=lax",
                "c=3",
                "d=4; Max-Age=999999999",
            ], from: url)
        let a = try #require(store.allCookies.first { $0.name == "a" })
        let expiry = try #require(a.expiresAt)
        #expect(abs(expiry.timeIntervalSinceNow - 3600) < 60)
        #expect(a.isHTTPOnly && a.sameSite == .strict)
        let b = try #require(store.allCookies.first { $0.name == "b" })
        // RFC 6265bis: an expiry later than 400 days from now is that day, whichever attribute set it.
        let fourHundredDays: TimeInterval = 400 * 86_400
        #expect(abs(try #require(b.expiresAt).timeIntervalSinceNow - fourHundredDays) < 60)
        let d = try #require(store.allCookies.first { $0.name == "d" })
        #expect(abs(try #require(d.expiresAt).timeIntervalSinceNow - fourHundredDays) < 60)
        #expect(b.sameSite == .lax && !b.isHTTPOnly)
        #expect(store.allCookies.first { $0.name == "c" }?.expiresAt == nil)

        store.store(
            setCookieFields: [
                "a=gone; Max-Age=0", "b=gone; Expires=Thu, 01 Jan 1970 00:00:01 GMT", "d=gone; Max-Age=-1",
            ],
            from: url)
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

    @Test(
        "URLs are matched as libcurl sends them; one that libcurl writes as it is stays as it is",
        arguments: [
            ("http://127.0.0.1:8080/a?b=/./c", "http://127.0.0.1:8080/a?b=/./c"),
            ("http://example.com/a/b", "http://example.com/a/b"),
            ("https://u:p@h.example/x", "https://u:p@h.example/x"),
            ("http://127.000.000.001/x", "http://127.0.0.1/x"), ("http://127.1/x", "http://127.0.0.1/x"),
            ("http://0x7f.0.0.1/x", "http://127.0.0.1/x"), ("http://cafe.de/a/../b", "http://cafe.de/b"),
            ("http://[0000::1]:8080/", "http://[::1]:8080/"), ("http://h.example/a/./b#f", "http://h.example/a/b#f"),
            // A part of twenty digits or more: read as it is, where it used to overflow (a crash).
            ("http://11111111111111111111/", "http://11111111111111111111/"),
            ("http://1.22222222222222222222.x/", "http://1.22222222222222222222.x/"),
            ("http://12345678901234567890123.cdn.example/a", "http://12345678901234567890123.cdn.example/a"),
        ])
    func urlsAsSent(written: String, sent: String) throws {
        let url = try #require(URL(string: written))
        #expect(ParsedURL.asSent(url).absoluteString == sent)
    }

    @Test("a cookie whose default path (from a long URL) or domain is over 1,024 bytes is ignored, not stored")
    func overlongDefaultPath() {
        let store = CookieStore()
        let longPath = "/" + String(repeating: "p", count: 1100) + "/page"
        let stored = store.store(setCookieFields: ["a=1", "b=2; Path=/"], from: testURL("http://h.example" + longPath))
        #expect(stored.map(\.name) == ["b"])
        #expect(store.allCookies.map(\.name) == ["b"])
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

        // 200 cookies set, 50 (the most a domain keeps) for each of four domains of the host: the site keeps 180,
        // all matching, more than one request carries.
        let many = CookieStore()
        for domain in ["h.example", "sub.h.example", "x.sub.h.example", "y.x.sub.h.example"] {
            for index in 0..<50 {
                many.setCookie(Cookie(name: "c\(index)", value: "1", domain: domain, isHostOnly: false))
            }
        }
        #expect(many.cookies(for: testURL("https://y.x.sub.h.example/")).count == CookieStore.maximumCookiesPerSite)
        let manyHeader = try #require(many.cookieHeader(for: testURL("https://y.x.sub.h.example/")))
        #expect(manyHeader.split(separator: ";").count == CookieStore.maximumCookiesPerRequest)
    }

    @Test("changes from two threads at once: after flush the file holds what the store holds, every round")
    func concurrentChangesEndInTheFile() async throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
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
            // Read as a second store would load it (the store holds the file: a second one is refused).
            #expect(try folder.cookieNames(in: file) == Set(store.allCookies.map(\.name)), "round \(round)")
        }
    }

    @Test("one store to a file: a second one throws fileInUse, from this process or another, until the first is gone")
    func oneStorePerFile() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        var first: CookieStore? = try CookieStore(persistingTo: file)
        first?.setCookie(Cookie(name: "a", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        first?.flush()
        // Before, the second store loaded, and each one's saves wrote its own cookies over the other's.
        let sameProcess = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: file) }
        #expect(sameProcess?.code == .fileInUse)
        #expect(sameProcess?.message.contains("this process") == true)
        first = nil
        var second: CookieStore? = try CookieStore(persistingTo: file)
        #expect(second?.allCookies.map(\.name) == ["a"])
        // close() lets the file go while the store lives (held by a session being replaced, say): what it had is
        // written, what it gets later stays in memory.
        second?.setCookie(
            Cookie(name: "b", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        second?.close()
        second?.setCookie(
            Cookie(name: "c", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        let third = try CookieStore(persistingTo: file)
        #expect(Set(third.allCookies.map(\.name)) == ["a", "b"])
        #expect(try folder.cookieNames(in: file) == ["a", "b"])
        #expect(second?.allCookies.count == 3)
        second = nil
        let lock = folder.file(".cookies.jsonl.lock")
        let mode = try FileManager.default.attributesOfItem(atPath: lock.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Another process's store: its lock, taken through a descriptor of its own on another file's lock.
        let other = folder.file("other.jsonl")
        let held = open(folder.file(".other.jsonl.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(held >= 0)
        defer { close(held) }
        #expect(flock(held, LOCK_EX | LOCK_NB) == 0)
        let otherProcess = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: other) }
        #expect(otherProcess?.code == .fileInUse)
        #expect(otherProcess?.message.contains("another process") == true)
        #expect(flock(held, LOCK_UN) == 0)
        _ = try CookieStore(persistingTo: other)

        // A folder that isn't there: refused at once, not a store whose saves all fail.
        let missing = #expect(throws: HeraldError.self) {
            try CookieStore(persistingTo: folder.file("missing/cookies.jsonl"))
        }
        #expect(missing?.code == .fileIO)
    }

    @Test("a persistent store writes JSON lines of its persistent cookies and reads them back")
    func persistence() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        do {
            let store = try CookieStore(persistingTo: file)
            store.store(
                setCookieFields: ["kept=1; Max-Age=600; Secure; HttpOnly; SameSite=None", "session=2"],
                from: testURL("https://h.example/"))
            store.flush()
        }
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["name"] as? String == "kept")
        #expect(object["domain"] as? String == "h.example")
        #expect(object["isSecure"] as? Bool == true)
        #expect(object["sameSite"] as? String == "None")
        #expect(object["expiresAt"] is Double)

        do {
            let reloaded = try CookieStore(persistingTo: file)
            #expect(reloaded.allCookies.map(\.name) == ["kept"])
            #expect(reloaded.cookieHeader(for: testURL("https://h.example/x")) == "kept=1")
        }

        try Data("{\"name\":\"broken\"}\n".utf8).write(to: file)
        let error = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: file) }
        #expect(error?.code == .fileIO)
        #expect(error?.message.contains("Line 1") == true)
    }

    @Test("flush says when a save failed, and the next save that succeeds clears it")
    func failedSaveIsReported() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let store = try CookieStore(persistingTo: folder.file())
        store.store(setCookieFields: ["a=1; Max-Age=600"], from: testURL("https://h.example/"))
        #expect(store.flush() == nil)
        // The folder goes (a cleaner, a user): no save can be written.
        folder.remove()
        store.store(setCookieFields: ["b=2; Max-Age=600"], from: testURL("https://h.example/"))
        let failure = store.flush()
        #expect(failure?.code == .fileIO)
        #expect(failure?.message.contains("cookie file") == true)
        // Back: the next change writes every cookie the store holds.
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: false)
        store.store(setCookieFields: ["c=3; Max-Age=600"], from: testURL("https://h.example/"))
        #expect(store.flush() == nil)
        #expect(try folder.cookieNames(in: folder.file()) == ["a", "b", "c"])
        #expect(CookieStore().flush() == nil)
    }

    @Test("a store removes the temporary copies a save cut short left beside its file, and nothing else")
    func leftoverTemporaryFilesRemoved() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let leftover = folder.url.appendingPathComponent(".cookies.jsonl.\(UUID().uuidString.lowercased())")
        let others = [".cookies.jsonl.notes", ".other.jsonl.\(UUID().uuidString.lowercased())", "cookies.jsonl.bak"]
        for name in [leftover.lastPathComponent] + others {
            try Data("{}\n".utf8).write(to: folder.url.appendingPathComponent(name))
        }
        let store = try CookieStore(persistingTo: folder.file())
        defer { store.close() }
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.url.path))
        #expect(!names.contains(leftover.lastPathComponent))
        #expect(names.isSuperset(of: others))
        #expect(names.contains(".cookies.jsonl.lock"))
    }

    @Test("at most 180 cookies per site, whatever its subdomains: another site's cookies stay")
    func siteLimit() {
        let store = CookieStore()
        store.store(setCookieFields: ["login=1; Max-Age=3600"], from: testURL("https://bank.example/"))
        // Five names under one registrable domain, 50 cookies each, set for the domain the host names.
        let hosts = [
            "evil.example", "a.evil.example", "b.a.evil.example", "c.b.a.evil.example", "d.c.b.a.evil.example",
        ]
        for host in hosts {
            store.store(
                setCookieFields: (0..<50).map { "c\($0)=1; Domain=\(host)" }, from: testURL("https://\(host)/"))
        }
        let evil = store.allCookies.filter { $0.domain.hasSuffix("evil.example") }
        #expect(evil.count == CookieStore.maximumCookiesPerSite)
        // The least recently stored went: the first host's.
        #expect(!evil.contains { $0.domain == "evil.example" })
        #expect(store.cookieHeader(for: testURL("https://bank.example/")) == "login=1")
    }

    @Test("hosts written with the root's dot count against the site without it")
    func siteLimitWithTrailingDots() {
        let store = CookieStore()
        store.store(setCookieFields: ["login=1; Max-Age=3600"], from: testURL("https://bank.example/"))
        // Before, each `xN.evil.example.` was a site of its own, with a limit of its own.
        for index in 1...5 {
            store.store(
                setCookieFields: (0..<50).map { "c\($0)=1" }, from: testURL("https://x\(index).evil.example./"))
        }
        let evil = store.allCookies.filter { $0.domain.hasSuffix("evil.example.") }
        #expect(evil.count == CookieStore.maximumCookiesPerSite)
        #expect(!evil.contains { $0.domain == "x1.evil.example." })
        #expect(store.cookieHeader(for: testURL("https://bank.example/")) == "login=1")
    }

    @Test("a Domain cookie a sibling host sets doesn't replace the site's host-only cookie of the same name")
    func domainCookieKeepsHostOnlyOne() throws {
        let store = CookieStore()
        store.store(setCookieFields: ["sid=good; Path=/; Secure"], from: testURL("https://example.com/login"))
        // Before, the key left out the host-only flag: the sibling's cookie replaced the site's login.
        store.store(
            setCookieFields: ["sid=evil; Domain=example.com; Path=/; Secure"], from: testURL("https://u.example.com/"))
        let sent = store.cookies(for: testURL("https://example.com/")).map { "\($0.name)=\($0.value)" }
        #expect(Set(sent) == ["sid=good", "sid=evil"])
        #expect(store.allCookies.count == 2)
        // Each is removed by its own kind: the site's expiry takes its host-only cookie only.
        store.store(setCookieFields: ["sid=; Path=/; Secure; Max-Age=0"], from: testURL("https://example.com/"))
        let left = try #require(store.allCookies.first)
        #expect(store.allCookies.count == 1)
        #expect(left.value == "evil")
        #expect(!left.isHostOnly)
    }

    @Test("a cookie stored or sent lately outlives older ones at a limit: the least recently used go first")
    func evictionByUse() {
        let store = CookieStore()
        let site = testURL("https://h.example/")
        store.store(setCookieFields: ["session=old"], from: site)
        store.store(setCookieFields: (0..<49).map { "c\($0)=1" }, from: site)
        // Stored again: used now, though created first.
        store.store(setCookieFields: ["session=refreshed"], from: site)
        store.store(setCookieFields: ["late=1"], from: site)
        #expect(store.byName["session"]?.value == "refreshed")
        #expect(store.byName["c0"] == nil && store.byName["c1"] != nil)

        // Sent: c1 alone goes with a request to /only, so it is used now; the next cookie over the limit takes
        // c2, the least recently used, instead of c1.
        let only = CookieStore()
        only.store(setCookieFields: ["c1=1; Path=/only"], from: site)
        only.store(setCookieFields: (2..<51).map { "c\($0)=1; Path=/other" }, from: site)
        #expect(only.cookieHeader(for: testURL("https://h.example/only")) != nil)
        only.store(setCookieFields: ["later=1"], from: site)
        #expect(only.byName["c1"] != nil)
        #expect(only.byName["c2"] == nil && only.byName["c3"] != nil)
    }

    @Test("a cookie that could not be sent as it is is refused by setCookie, and left out of a file that holds one")
    func malformedCookies() throws {
        let store = CookieStore()
        for cookie in [
            Cookie(name: "a", value: "x\r\nX-Injected: 1", domain: "h.example"),
            Cookie(name: "", value: "x", domain: "h.example"),
            Cookie(name: "a=b", value: "x", domain: "h.example"),
            Cookie(name: "a", value: "x; b=2", domain: "h.example"),
            Cookie(name: "a", value: "x", domain: "h.example", path: "nope"),
            // Longer than any response may set.
            Cookie(name: "a", value: String(repeating: "x", count: 4096), domain: "h.example"),
            Cookie(name: "a", value: "x", domain: "h.example", path: "/" + String(repeating: "p", count: 1024)),
            // No response could set these, and the file would not give them back.
            Cookie(name: "__Secure-a", value: "x", domain: "h.example"),
            Cookie(name: "a", value: "x", domain: "github.io", isHostOnly: false),
        ] {
            #expect(!store.setCookie(cookie), "\(cookie.name)=\(cookie.value)")
        }
        #expect(store.cookieHeader(for: testURL("http://h.example/")) == nil)
        #expect(store.setCookie(Cookie(name: "a", value: "x", domain: "h.example")))

        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        let bad =
            #"{"creationDate":1,"domain":"h.example","expiresAt":4000000000,"isHTTPOnly":false,"#
            + #""isHostOnly":true,"isSecure":false,"name":"a","path":"/","value":"x\r\nX-Injected: 1"}"#
        let good =
            #"{"creationDate":2,"domain":"h.example","expiresAt":4000000000,"isHTTPOnly":false,"#
            + #""isHostOnly":true,"isSecure":false,"name":"b","path":"/","value":"2"}"#
        try Data((bad + "\n" + good + "\n").utf8).write(to: file)
        // The cookie that can't be sent is left out and counted; the rest of the file loads.
        let loaded = try CookieStore(persistingTo: file)
        #expect(loaded.unsendableCookiesSkipped == 1)
        #expect(loaded.cookieHeader(for: testURL("http://h.example/")) == "b=2")
    }

    @Test("a cookie file is read as cookies are stored: domains normalised, limits kept, size bounded, mode 0600")
    func fileIsHeldToTheRules() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        func line(_ name: String, domain: String, created: Int) -> String {
            #"{"creationDate":\#(created),"domain":"\#(domain)","expiresAt":4000000000,"isHTTPOnly":false,"#
                + #""isHostOnly":true,"isSecure":false,"name":"\#(name)","path":"/","value":"1"}"#
        }
        var lines = (0..<60).map { line("c\($0)", domain: "h.example", created: 1000 + $0) }
        lines.append(line("up", domain: "UP.EXAMPLE", created: 5))
        lines.append(line("dot", domain: ".dot.example", created: 5))
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let store = try CookieStore(persistingTo: file)
        #expect(store.allCookies.filter { $0.domain == "h.example" }.count == CookieStore.maximumCookiesPerDomain)
        #expect(store.byName["c0"] == nil && store.byName["c59"] != nil)
        #expect(store.cookieHeader(for: testURL("http://up.example/")) == "up=1")
        #expect(store.cookieHeader(for: testURL("http://dot.example/")) == "dot=1")

        store.setCookie(
            Cookie(name: "new", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(60)))
        store.flush()
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let oversized = folder.file("oversized.jsonl")
        try Data(count: CookieStore.maximumFileSize + 1).write(to: oversized)
        let error = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: oversized) }
        #expect(error?.code == .fileIO)
    }

    @Test("a cookie file's cookies no response could have set are left out; lifetimes are capped at 400 days")
    func fileRefusesWhatAResponseCouldNot() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        func line(_ name: String, domain: String, hostOnly: Bool, secure: Bool, path: String = "/") -> String {
            #"{"creationDate":1,"domain":"\#(domain)","expiresAt":4000000000,"isHTTPOnly":false,"#
                + #""isHostOnly":\#(hostOnly),"isSecure":\#(secure),"name":"\#(name)","path":"\#(path)","value":"1"}"#
        }
        let lines = [
            // A domain cookie for a public suffix: sent to every site under it.
            line("suffix", domain: "co.uk", hostOnly: false, secure: true),
            line("__Secure-plain", domain: "bank.co.uk", hostOnly: true, secure: false),
            line("__Host-wide", domain: "bank.co.uk", hostOnly: false, secure: true),
            line("__host-deep", domain: "bank.co.uk", hostOnly: true, secure: true, path: "/app"),
            line("__Host-ok", domain: "bank.co.uk", hostOnly: true, secure: true),
            line("plain", domain: "bank.co.uk", hostOnly: true, secure: false),
        ]
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let store = try CookieStore(persistingTo: file)
        #expect(store.unsendableCookiesSkipped == 4)
        #expect(Set(store.allCookies.map(\.name)) == ["__Host-ok", "plain"])
        #expect(store.cookieHeader(for: testURL("https://other.co.uk/")) == nil)
        // 2096 in the file: 400 days from now at most, as for a cookie a response sets.
        for cookie in store.allCookies {
            let expiry = try #require(cookie.expiresAt)
            #expect(abs(expiry.timeIntervalSinceNow - 400 * 86_400) < 60)
        }
    }

    @Test("Domain naming a public suffix with a trailing dot, or an IP address, keeps the cookie to its host")
    func hostOnlyDomains() {
        let dotted = CookieStore.after(["t=1; Domain=github.io."], from: testURL("http://github.io./"))
        #expect(dotted.byName["t"]?.isHostOnly == true)
        #expect(dotted.cookieHeader(for: testURL("http://victim.github.io./")) == nil)
        #expect(dotted.cookieHeader(for: testURL("http://github.io./")) == "t=1")

        let address = CookieStore.after(["ip=1; Domain=127.0.0.1"], from: testURL("http://127.0.0.1/"))
        #expect(address.byName["ip"]?.isHostOnly == true)
        #expect(address.cookieHeader(for: testURL("http://x.127.0.0.1/")) == nil)
        #expect(address.cookieHeader(for: testURL("http://127.0.0.1/")) == "ip=1")
    }

    @Test("name prefixes: __Secure- needs Secure; __Host- needs Secure, no Domain and Path=/; in any case")
    func namePrefixes() {
        let site = testURL("https://www.h.example/a/")
        let store = CookieStore()
        let kept = store.store(
            setCookieFields: [
                "__Secure-a=1", "__Secure-b=1; Secure", "__secure-c=1",
                "__Host-d=1; Secure; Path=/", "__Host-e=1; Secure", "__Host-f=1; Secure; Path=/; Domain=h.example",
                "__HOST-g=1; Path=/", "__Host-h=1; Secure; Path=/; Domain=www.h.example",
            ],
            from: site)
        #expect(kept.map(\.name) == ["__Secure-b", "__Host-d"])
    }

    @Test("an http response can't replace or shadow a Secure cookie of the same name; https can")
    func plainResponseLeavesSecureCookies() {
        let store = CookieStore()
        store.store(setCookieFields: ["sid=good; Secure; Domain=h.example"], from: testURL("https://www.h.example/"))
        let attempts = [
            "sid=evil", "sid=evil; Domain=h.example", "sid=evil; Path=/deeper", "sid=; Max-Age=0; Domain=h.example",
        ]
        for attempt in attempts {
            #expect(
                store.store(setCookieFields: [attempt], from: testURL("http://www.h.example/")).isEmpty, "\(attempt)")
        }
        #expect(store.cookieHeader(for: testURL("https://www.h.example/deeper")) == "sid=good")
        // Another name, or the same name from https, is stored as ever.
        #expect(store.store(setCookieFields: ["other=1"], from: testURL("http://www.h.example/")).count == 1)
        store.store(setCookieFields: ["sid=new; Secure; Domain=h.example"], from: testURL("https://www.h.example/"))
        #expect(store.byName["sid"]?.value == "new")
    }

    @Test("only spaces and tabs are trimmed from a name and value: a no-break space is part of the value")
    func trimsBlanksOnly() {
        let store = CookieStore.after(["a= \t\u{A0}x\u{A0}\t "])
        #expect(store.byName["a"]?.value == "\u{A0}x\u{A0}")
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
