import Foundation
import Herald
import Testing

/// The cookie store against RFC 6265's examples and the cases other cookie jars are measured with: fields
/// processed in order, one leading dot, public suffixes in punycode, wildcard and exception rules.
@Suite("Cookie store against the standards")
struct CookieStandardTests {
    @Test("RFC 6265 §3.1's examples: host-only, Domain, Secure and HttpOnly, and removal by a past Expires")
    func rfcExamples() {
        let store = CookieStore.after(["SID=31d4d96e407aad42"], from: testURL("http://www.example.com/"))
        #expect(store.cookieHeader(for: testURL("http://www.example.com/")) == "SID=31d4d96e407aad42")
        #expect(store.cookieHeader(for: testURL("http://example.com/")) == nil)

        let wide = CookieStore()
        wide.store(
            setCookieFields: ["SID=31d4d96e407aad42; Path=/; Domain=example.com"],
            from: testURL("http://www.example.com/"))
        #expect(wide.cookieHeader(for: testURL("http://example.com/")) == "SID=31d4d96e407aad42")
        #expect(wide.cookieHeader(for: testURL("http://a.www.example.com/x")) == "SID=31d4d96e407aad42")

        let two = CookieStore()
        two.store(
            setCookieFields: [
                "SID=31d4d96e407aad42; Path=/; Secure; HttpOnly", "lang=en-US; Path=/; Domain=example.com",
            ],
            from: testURL("https://www.example.com/"))
        #expect(two.cookieHeader(for: testURL("https://www.example.com/")) == "SID=31d4d96e407aad42; lang=en-US")
        #expect(two.cookieHeader(for: testURL("http://www.example.com/")) == "lang=en-US")
        two.store(
            setCookieFields: ["lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Domain=example.com; Path=/"],
            from: testURL("https://www.example.com/"))
        #expect(two.cookieHeader(for: testURL("https://www.example.com/")) == "SID=31d4d96e407aad42")
    }

    @Test("one response's fields apply in order: a=1 then a=; Max-Age=0 (a logout) leaves no a")
    func inOrder() {
        let url = testURL("http://h.example/")
        let store = CookieStore()
        store.store(setCookieFields: ["a=0", "b=0"], from: url)
        let stored = store.store(setCookieFields: ["a=1", "a=; Max-Age=0"], from: url)
        #expect(stored.isEmpty)
        #expect(store.cookieHeader(for: url) == "b=0")
        // Expires in the past in place of Max-Age, and the same with a Domain cookie.
        store.store(setCookieFields: ["b=1", "b=; Expires=Thu, 01 Jan 1970 00:00:01 GMT"], from: url)
        #expect(store.cookieHeader(for: url) == nil)
        let domain = testURL("http://www.example.com/")
        store.store(
            setCookieFields: ["s=1; Domain=example.com", "s=; Domain=example.com; Max-Age=0"], from: domain)
        #expect(store.cookieHeader(for: domain) == nil)
        // The other way round, the last field wins too, and a cookie replaced within the response is listed once.
        let again = store.store(setCookieFields: ["a=; Max-Age=0", "a=2", "c=1", "a=3"], from: url)
        #expect(again.map { "\($0.name)=\($0.value)" } == ["c=1", "a=3"])
        #expect(store.cookieHeader(for: url) == "a=3; c=1")
    }

    @Test("Domain: exactly one leading dot is dropped")
    func leadingDots() {
        let url = testURL("http://home.example.org/")
        let store = CookieStore()
        #expect(store.store(setCookieFields: ["a=1; Domain=..home.example.org"], from: url).isEmpty)
        #expect(store.store(setCookieFields: ["a=1; Domain=...example.org"], from: url).isEmpty)
        let one = store.store(setCookieFields: ["b=1; Domain=.home.example.org"], from: url)
        #expect(one.map(\.domain) == ["home.example.org"])
        #expect(one.first?.isHostOnly == false)
        let parent = store.store(setCookieFields: ["c=1; Domain=.EXAMPLE.org"], from: url)
        #expect(parent.map(\.domain) == ["example.org"])
        #expect(store.cookieHeader(for: testURL("http://other.example.org/")) == "c=1")
        #expect(Cookie(name: "d", value: "1", domain: "..example.org").domain == ".example.org")
    }

    @Test("a wildcard rule and its exception: *.kobe.jp and !city.kobe.jp")
    func wildcardAndException() {
        let list = PublicSuffixList(rules: "jp\n*.kobe.jp\n!city.kobe.jp\n", source: .builtIn)
        let store = CookieStore(publicSuffixes: list)
        // city.kobe.jp is registrable: a cookie for it is fine, and broader than it is refused.
        let city = store.store(
            setCookieFields: ["a=1; Domain=city.kobe.jp"], from: testURL("http://www.city.kobe.jp/"))
        #expect(city.map(\.domain) == ["city.kobe.jp"])
        #expect(store.store(setCookieFields: ["b=1; Domain=kobe.jp"], from: testURL("http://city.kobe.jp/")).isEmpty)
        #expect(
            store.store(setCookieFields: ["b=1; Domain=kobe.jp"], from: testURL("http://www.city.kobe.jp/")).isEmpty)
        #expect(store.store(setCookieFields: ["b=1; Domain=jp"], from: testURL("http://city.kobe.jp/")).isEmpty)
        // Under the wildcard, c.kobe.jp is a public suffix, b.c.kobe.jp registrable.
        #expect(store.store(setCookieFields: ["c=1; Domain=c.kobe.jp"], from: testURL("http://b.c.kobe.jp/")).isEmpty)
        #expect(store.store(setCookieFields: ["c=1; Domain=kobe.jp"], from: testURL("http://b.c.kobe.jp/")).isEmpty)
        let registrant = store.store(
            setCookieFields: ["d=1; Domain=b.c.kobe.jp"], from: testURL("http://a.b.c.kobe.jp/"))
        #expect(registrant.map(\.domain) == ["b.c.kobe.jp"])
        #expect(store.cookieHeader(for: testURL("http://other.kobe.jp/")) == nil)
        #expect(store.cookieHeader(for: testURL("http://x.c.kobe.jp/")) == nil)
        // A host that is a public suffix itself may set a host-only cookie, never a broader one.
        let own = store.store(setCookieFields: ["e=1; Domain=c.kobe.jp"], from: testURL("http://c.kobe.jp/"))
        #expect(own.first?.isHostOnly == true)
    }

    @Test("internationalized public suffixes are matched in punycode, from the system list and the built-in one")
    func internationalizedSuffixes() {
        for list in [PublicSuffixList.shared, .builtIn] {
            let store = CookieStore(publicSuffixes: list)
            let host = testURL("http://xn--85x722f.xn--55qx5d.cn/")  // 食狮.公司.cn
            #expect(store.store(setCookieFields: ["a=1; Domain=xn--55qx5d.cn"], from: host).isEmpty)
            #expect(store.store(setCookieFields: ["a=1; Domain=公司.cn"], from: host).isEmpty)
            let own = store.store(setCookieFields: ["b=1; Domain=xn--85x722f.xn--55qx5d.cn"], from: host)
            #expect(own.map(\.domain) == ["xn--85x722f.xn--55qx5d.cn"])
            let unicode = store.store(setCookieFields: ["c=1; Domain=食狮.公司.cn"], from: host)
            #expect(unicode.map(\.domain) == ["xn--85x722f.xn--55qx5d.cn"])
            #expect(store.cookieHeader(for: testURL("http://www.xn--85x722f.xn--55qx5d.cn/")) == "b=1; c=1")
            #expect(store.cookieHeader(for: testURL("http://other.xn--55qx5d.cn/")) == nil)
            let china = testURL("http://www.xn--85x722f.xn--fiqs8s/")  // www.食狮.中国
            #expect(store.store(setCookieFields: ["d=1; Domain=xn--fiqs8s"], from: china).isEmpty)
            #expect(store.store(setCookieFields: ["d=1; Domain=中国"], from: china).isEmpty)
            #expect(store.store(setCookieFields: ["e=1; Domain=xn--85x722f.xn--fiqs8s"], from: china).count == 1)
        }
    }

    @Test(
        "RFC 6265bis: a control character anywhere but a tab drops the field; an attribute over 1024 bytes is ignored")
    func rfc6265bisLimits() {
        let url = testURL("http://h.example/app/x")
        let store = CookieStore()
        let stored = store.store(
            setCookieFields: [
                "tab=a\tb", "bell=a\u{7}b", "inAttribute=1; Path=/\u{1}", "delete=1; Max-Age=60\u{7F}",
                "longPath=1; Path=/" + String(repeating: "p", count: 1024),
                "okPath=1; Path=/" + String(repeating: "p", count: 1023),
            ], from: url)
        #expect(stored.map(\.name) == ["tab", "longPath", "okPath"])
        #expect(stored.first { $0.name == "longPath" }?.path == "/app")
        #expect(stored.first { $0.name == "okPath" }?.path.utf8.count == 1024)
    }
}
