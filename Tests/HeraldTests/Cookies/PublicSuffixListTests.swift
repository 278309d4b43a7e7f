import Foundation
import Herald
import HeraldNotifications
import Testing

/// The Public Suffix List's algorithm and its own test file's `checkPublicSuffix(domain, registrable)` cases,
/// answered by ``PublicSuffixList/registrableDomain(for:)`` over the list Debian's `publicsuffix` installs.
@Suite("Public suffix list")
struct PublicSuffixListTests {
    /// `checkPublicSuffix(domain, expected)`: the domain, and its registrable domain (`nil` for the file's
    /// `null`).
    static let checkPublicSuffix: [(String?, String?)] = [
        // null input.
        (nil, nil),
        // Mixed case.
        ("COM", nil),
        ("example.COM", "example.com"),
        ("WwW.example.COM", "example.com"),
        // Leading dot.
        (".com", nil),
        (".example", nil),
        (".example.com", nil),
        (".example.example", nil),
        // Unlisted TLD.
        ("example", nil),
        ("example.example", "example.example"),
        ("b.example.example", "example.example"),
        ("a.b.example.example", "example.example"),
        // TLD with only 1 rule.
        ("biz", nil),
        ("domain.biz", "domain.biz"),
        ("b.domain.biz", "domain.biz"),
        ("a.b.domain.biz", "domain.biz"),
        // TLD with some 2-level rules.
        ("com", nil),
        ("example.com", "example.com"),
        ("b.example.com", "example.com"),
        ("a.b.example.com", "example.com"),
        ("uk.com", nil),
        ("example.uk.com", "example.uk.com"),
        ("b.example.uk.com", "example.uk.com"),
        ("a.b.example.uk.com", "example.uk.com"),
        ("test.ac", "test.ac"),
        // TLD with only 1 (wildcard) rule.
        ("mm", nil),
        ("c.mm", nil),
        ("b.c.mm", "b.c.mm"),
        ("a.b.c.mm", "b.c.mm"),
        // More complex TLD.
        ("jp", nil),
        ("test.jp", "test.jp"),
        ("www.test.jp", "test.jp"),
        ("ac.jp", nil),
        ("test.ac.jp", "test.ac.jp"),
        ("www.test.ac.jp", "test.ac.jp"),
        ("kyoto.jp", nil),
        ("test.kyoto.jp", "test.kyoto.jp"),
        ("ide.kyoto.jp", nil),
        ("b.ide.kyoto.jp", "b.ide.kyoto.jp"),
        ("a.b.ide.kyoto.jp", "b.ide.kyoto.jp"),
        ("c.kobe.jp", nil),
        ("b.c.kobe.jp", "b.c.kobe.jp"),
        ("a.b.c.kobe.jp", "b.c.kobe.jp"),
        ("city.kobe.jp", "city.kobe.jp"),
        ("www.city.kobe.jp", "city.kobe.jp"),
        // TLD with a wildcard rule and exceptions.
        ("ck", nil),
        ("test.ck", nil),
        ("b.test.ck", "b.test.ck"),
        ("a.b.test.ck", "b.test.ck"),
        ("www.ck", "www.ck"),
        ("www.www.ck", "www.ck"),
        // US K12.
        ("us", nil),
        ("test.us", "test.us"),
        ("www.test.us", "test.us"),
        ("ak.us", nil),
        ("test.ak.us", "test.ak.us"),
        ("www.test.ak.us", "test.ak.us"),
        ("k12.ak.us", nil),
        ("test.k12.ak.us", "test.k12.ak.us"),
        ("www.test.k12.ak.us", "test.k12.ak.us"),
        // IDN labels.
        ("食狮.com.cn", "食狮.com.cn"),
        ("食狮.公司.cn", "食狮.公司.cn"),
        ("www.食狮.公司.cn", "食狮.公司.cn"),
        ("shishi.公司.cn", "shishi.公司.cn"),
        ("公司.cn", nil),
        ("食狮.中国", "食狮.中国"),
        ("www.食狮.中国", "食狮.中国"),
        ("shishi.中国", "shishi.中国"),
        ("中国", nil),
        // Same as above, but punycoded.
        ("xn--85x722f.com.cn", "xn--85x722f.com.cn"),
        ("xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("www.xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("shishi.xn--55qx5d.cn", "shishi.xn--55qx5d.cn"),
        ("xn--55qx5d.cn", nil),
        ("xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"),
        ("www.xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"),
        ("shishi.xn--fiqs8s", "shishi.xn--fiqs8s"),
        ("xn--fiqs8s", nil),
    ]

    @Test("the list's test file: checkPublicSuffix(domain, registrable)", arguments: checkPublicSuffix)
    func registrableDomain(domain: String?, expected: String?) {
        #expect(PublicSuffixList.shared.registrableDomain(for: domain) == expected, "\(domain ?? "null")")
    }

    @Test("isPublicSuffix is the same algorithm: a domain is a suffix when it has no registrable domain of its own")
    func isPublicSuffix() {
        let list = PublicSuffixList.shared
        for (domain, expected) in Self.checkPublicSuffix {
            guard let domain, !domain.hasPrefix(".") else { continue }
            #expect(list.isPublicSuffix(domain) == (expected == nil), "\(domain)")
        }
        #expect(list.isPublicSuffix("XN--55QX5D.CN") && list.isPublicSuffix("公司.CN"))
        #expect(!list.isPublicSuffix("kobe.jp"))  // under *.kobe.jp, but no rule names kobe.jp itself
        #expect(!list.isPublicSuffix("") && !list.isPublicSuffix(".com") && !list.isPublicSuffix("com."))
        #expect(!list.isPublicSuffix("a..com") && !list.isPublicSuffix("127.0.0.1") && !list.isPublicSuffix("::1"))
    }

    @Test("not domain names: IP addresses, empty labels, a label with no ASCII form")
    func notDomainNames() {
        let list = PublicSuffixList.shared
        for host in [
            "127.0.0.1", "::1", "", ".", "example.com.", "a..example.com", "x.\u{0301}a.com", "www.example\u{3002}com",
        ] {
            #expect(list.registrableDomain(for: host) == nil, "\(host)")
        }
    }

    @Test("rules in Unicode are kept in punycode; an exception prevails over a longer rule; the fallback too")
    func unicodeRulesAndPrecedence() {
        let list = PublicSuffixList(
            rules: "cn\n公司.cn\n*.例子.cn\n!特别.例子.cn\nde\nextra.long.de\n!long.de\n", source: .builtIn)
        #expect(list.count == 7)
        #expect(list.isPublicSuffix("xn--55qx5d.cn"))
        #expect(list.registrableDomain(for: "a.b.xn--fsqu00a.cn") == "a.b.xn--fsqu00a.cn")  // b.例子.cn is a suffix
        #expect(list.registrableDomain(for: "a.特别.例子.cn") == "特别.例子.cn")
        #expect(list.registrableDomain(for: "a.xn--fsqu00a.cn") == nil)
        // The exception names long.de registrable, though the longer rule extra.long.de matches more labels.
        #expect(list.registrableDomain(for: "www.extra.long.de") == "long.de")

        let builtIn = PublicSuffixList.builtIn
        #expect(builtIn.isPublicSuffix("xn--55qx5d.cn") && builtIn.isPublicSuffix("xn--fiqs8s"))
        #expect(builtIn.registrableDomain(for: "www.xn--85x722f.xn--55qx5d.cn") == "xn--85x722f.xn--55qx5d.cn")
        #expect(builtIn.registrableDomain(for: "www.example.co.uk") == "example.co.uk")
    }

    @Test("a list read on first use is read once, by the first question; a store holding it doesn't read it")
    func readOnFirstUse() {
        let reads = Locked(0)
        let list = PublicSuffixList(readingOnFirstUse: {
            reads.withLock { $0 += 1 }
            return PublicSuffixList(rules: "uk\nco.uk\n", source: .builtIn)
        })
        let store = CookieStore(publicSuffixes: list)
        #expect(reads.withLock { $0 } == 0)

        // The first Set-Cookie field makes the store ask: the list is read then, and its rules apply.
        #expect(store.store(setCookieFields: ["a=1; Domain=co.uk"], from: testURL("http://www.example.co.uk/")).isEmpty)
        #expect(reads.withLock { $0 } == 1)
        let stored = store.store(
            setCookieFields: ["b=2; Domain=example.co.uk"], from: testURL("http://www.example.co.uk/"))
        #expect(stored.map(\.name) == ["b"])
        #expect(list.count == 2 && list.source == .builtIn)
        #expect(reads.withLock { $0 } == 1)
    }

    @Test("threads asking a list left for its first use at once read it once and get the same answers")
    func readOnceUnderConcurrentFirstUse() async {
        let reads = Locked(0)
        let list = PublicSuffixList(readingOnFirstUse: {
            reads.withLock { $0 += 1 }
            return PublicSuffixList.builtIn
        })
        let answers = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<32 {
                group.addTask { list.registrableDomain(for: "www.example.co.uk") }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(answers == Array(repeating: "example.co.uk", count: 32))
        #expect(reads.withLock { $0 } == 1)
    }
}
