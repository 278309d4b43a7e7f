import Foundation
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("No-proxy entries: names, addresses, ranges and * decided by Herald")
struct NoProxyRulesTests {
    @Test("names cover their subdomains, ignoring case, a leading dot and a final dot; never an address")
    func names() {
        let rules = NoProxyRules(["Example.COM", ".internal.test", "localhost"])
        #expect(rules.bypasses(host: "example.com"))
        #expect(rules.bypasses(host: "api.example.com."))
        #expect(rules.bypasses(host: "internal.test"))
        #expect(rules.bypasses(host: "a.b.internal.test"))
        #expect(rules.bypasses(host: "LOCALHOST"))
        #expect(!rules.bypasses(host: "notexample.com"))
        #expect(!rules.bypasses(host: "example.com.evil.test"))
        #expect(!rules.bypasses(host: "127.0.0.1"))
        // Other tools' `*.example.com` means `.example.com`.
        let wildcard = NoProxyRules(["*.corp.test"])
        #expect(wildcard.bypasses(host: "git.corp.test"))
        #expect(wildcard.bypasses(host: "corp.test"))
        #expect(!wildcard.bypasses(host: "corp.test.evil.test"))
    }

    @Test("addresses and ranges match IPv4 and IPv6 hosts however they are spelled; * anywhere matches all")
    func addresses() {
        let rules = NoProxyRules(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "[::1]", "2001:db8::/32"])
        #expect(rules.bypasses(host: "10.255.1.2"))
        #expect(!rules.bypasses(host: "11.0.0.1"))
        #expect(rules.bypasses(host: "192.168.1.7"))
        #expect(!rules.bypasses(host: "192.168.1.8"))
        #expect(rules.bypasses(host: "fd12:3456::1"))
        #expect(rules.bypasses(host: "[fd12:3456::1]"))
        #expect(!rules.bypasses(host: "fe80::1"))
        #expect(rules.bypasses(host: "0:0:0:0:0:0:0:1"))
        #expect(rules.bypasses(host: "[::1]"))
        #expect(rules.bypasses(host: "2001:DB8:0:1::5"))
        #expect(!rules.bypasses(host: "example.com"))
        #expect(NoProxyRules(["example.com", "*"]).bypasses(host: "anything.test"))
        #expect(NoProxyRules(["0.0.0.0/0"]).bypasses(host: "203.0.113.9"))
        // An IPv4-mapped IPv6 host is the IPv4 address it stands for.
        #expect(rules.bypasses(host: "[::ffff:10.0.0.1]"))
        #expect(!NoProxyRules([]).bypasses(host: "127.0.0.1"))
    }

    @Test("an IPv4 host in a shorthand form libcurl reads (127.1, 2130706433, 0x7f.1) is that address")
    func shorthandIPv4Hosts() {
        let rules = NoProxyRules(["127.0.0.0/8"])
        for host in ["127.1", "2130706433", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1", "127.0.1"] {
            #expect(rules.bypasses(host: host), "\(host)")
        }
        for host in ["128.1", "10.0.0.1", "1e100.net", "deadbeef.cafe", "123.abc", "0x80.1"] {
            #expect(!rules.bypasses(host: host), "\(host)")
        }
        // An entry written so is that address too.
        #expect(NoProxyRules(["127.1"]).bypasses(host: "127.1"))
        #expect(NoProxyRules(["127.1"]).bypasses(host: "127.0.0.1"))
        #expect(NoProxyRules(["10.1/8"]).bypasses(host: "10.200.0.1"))
    }

    @Test("an IPv4-mapped entry is the IPv4 address or range it maps")
    func mappedEntries() {
        #expect(NoProxyRules(["::ffff:10.0.0.1"]).bypasses(host: "10.0.0.1"))
        #expect(NoProxyRules(["::ffff:10.0.0.0/104"]).bypasses(host: "10.9.8.7"))
        #expect(!NoProxyRules(["::ffff:10.0.0.0/104"]).bypasses(host: "11.0.0.1"))
        #expect(NoProxyRules(["::ffff:0:0/96"]).bypasses(host: "192.0.2.1"))
        #expect(NoProxyRules(["::ffff:10.0.0.1"]).bypasses(host: "[::ffff:10.0.0.1]"))
    }

    @Test("an entry with a port or a prefix that doesn't fit is refused by validate, naming it")
    func refusedEntries() {
        for entry in [
            "example.com:8080", "10.0.0.0/33", "::1/129", "host.test/8", "[::1]:443", "10.0.0.0/x", "api.*.test",
        ] {
            #expect(NoProxyRules.problem(in: entry) != nil, "\(entry)")
            let proxy = Proxy(kind: .http, host: "127.0.0.1", port: 3128, excludedHosts: [entry])
            #expect(throws: HeraldError.self, "\(entry)") { try proxy.validate() }
        }
        for entry in [
            "*", "example.com", ".example.com", "*.example.com", "10.0.0.0/8", "::1", "[::1]", "fd00::/8",
            "10.1.2.3/32",
        ] {
            #expect(NoProxyRules.problem(in: entry) == nil, "\(entry)")
        }
    }
}
