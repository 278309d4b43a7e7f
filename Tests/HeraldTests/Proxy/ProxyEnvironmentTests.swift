import Foundation
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Proxy environment variables")
struct ProxyEnvironmentTests {
    /// Whether an environment of these `NAME=value` entries (in this order) names a proxy for `scheme`.
    private static func names(entries: [String], scheme: String) -> Bool {
        let strings = entries.map { strdup($0) } + [nil]
        defer { strings.forEach { free($0) } }
        return strings.withUnsafeBufferPointer {
            Transfer.environmentMayNameProxy(forScheme: scheme, entries: $0.baseAddress)
        }
    }

    private static func names(_ environment: [String: String], scheme: String) -> Bool {
        // Among other variables, as in a real environment.
        let others = ["PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "A=", "H="]
        return names(entries: others + environment.map { "\($0.key)=\($0.value)" } + ["TERM=xterm"], scheme: scheme)
    }

    @Test("the variables libcurl reads for a scheme's proxy are the ones checked, and only those")
    func variablesPerScheme() {
        #expect(!Self.names([:], scheme: "http"))
        #expect(!Self.names([:], scheme: "https"))
        #expect(Self.names(["http_proxy": "http://127.0.0.1:3128"], scheme: "http"))
        // libcurl ignores HTTP_PROXY (a CGI program would find a request's Proxy header there).
        #expect(!Self.names(["HTTP_PROXY": "http://127.0.0.1:3128"], scheme: "http"))
        #expect(Self.names(["https_proxy": "http://127.0.0.1:3128"], scheme: "https"))
        #expect(Self.names(["HTTPS_PROXY": "http://127.0.0.1:3128"], scheme: "https"))
        #expect(Self.names(["HTTPS_PROXY": "http://127.0.0.1:3128"], scheme: "HTTPS"))
        #expect(!Self.names(["https_proxy": "http://127.0.0.1:3128"], scheme: "http"))
        #expect(!Self.names(["http_proxy": "http://127.0.0.1:3128"], scheme: "https"))
        #expect(Self.names(["all_proxy": "socks5://127.0.0.1:1080"], scheme: "https"))
        #expect(Self.names(["ALL_PROXY": "socks5://127.0.0.1:1080"], scheme: "http"))
        // Only a proxy can make one be used; a no-proxy list alone can't.
        #expect(!Self.names(["no_proxy": "*", "NO_PROXY": "localhost"], scheme: "http"))
    }

    @Test("only a whole name followed by '=' counts: longer and shorter names, and an entry without '=', don't")
    func wholeNamesOnly() {
        let url = "http://127.0.0.1:3128"
        #expect(!Self.names(entries: ["http_proxyX=\(url)", "http_prox=\(url)", "xhttp_proxy=\(url)"], scheme: "http"))
        #expect(!Self.names(entries: ["http_proxy", "all_proxy"], scheme: "http"))
        #expect(!Self.names(entries: ["Http_proxy=\(url)", "all_PROXY=\(url)"], scheme: "http"))
        #expect(Self.names(entries: ["http_proxyX=\(url)", "http_proxy=\(url)"], scheme: "http"))
        #expect(!Self.names(entries: [], scheme: "https"))
        #expect(Self.names(entries: ["gopher_proxy=\(url)"], scheme: "gopher"))
        #expect(Self.names(entries: ["GOPHER_PROXY=\(url)"], scheme: "gopher"))
        #expect(!Self.names(entries: ["http_proxy=\(url)"], scheme: "gopher"))
        #expect(!Transfer.environmentMayNameProxy(forScheme: "http", entries: nil))
    }

    @Test("an empty variable is unset, as libcurl's curl_getenv treats it")
    func emptyIsUnset() {
        #expect(!Self.names(["http_proxy": "", "all_proxy": "", "ALL_PROXY": ""], scheme: "http"))
        #expect(Self.names(["http_proxy": "", "ALL_PROXY": "http://127.0.0.1:3128"], scheme: "http"))
    }

    @Test("the names for http and https, kept ready, are the ones any other scheme's are derived like")
    func namesAreDerivedAlike() {
        #expect(Transfer.proxyVariables(forScheme: "http") == ["http_proxy", "all_proxy", "ALL_PROXY"])
        let https = ["https_proxy", "all_proxy", "ALL_PROXY", "HTTPS_PROXY"]
        #expect(Transfer.proxyVariables(forScheme: "https") == https)
        #expect(Transfer.proxyVariables(forScheme: "HTTPS") == https)
        #expect(Transfer.proxyVariables(forScheme: "ftp") == ["ftp_proxy", "all_proxy", "ALL_PROXY", "FTP_PROXY"])
    }
}
