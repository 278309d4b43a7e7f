import CCurl
import Foundation

// The session's explicit proxy, applied to each easy handle. Without one, libcurl's proxy environment
// variables apply, as for the curl tool.
extension Transfer {
    /// Sets the proxy, its credential and the hosts reached directly, on the thread that prepares the
    /// transfer.
    ///
    /// Without an explicit proxy libcurl would read five environment variables for every transfer, on the
    /// loop thread. When none of the variables that could name a proxy for this URL is set, it is told so
    /// here instead — an empty proxy is "none", an empty no-proxy list skips reading `no_proxy` — which is
    /// what it would have concluded. When one is set, libcurl reads them itself as before.
    func configureProxy(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        guard let proxy = request.proxy else {
            if !proxyFromEnvironment {
                check("PROXY", herald_easy_setopt_string(easy, CURLOPT_PROXY, ""))
                check("NOPROXY", herald_easy_setopt_string(easy, CURLOPT_NOPROXY, ""))
            }
            return
        }
        check("PROXY", herald_easy_setopt_string(easy, CURLOPT_PROXY, proxy.description))
        // Always set, even empty: "" makes curl use the proxy for every host, loopback included, and ignore
        // the no_proxy environment variable.
        check("NOPROXY", herald_easy_setopt_string(easy, CURLOPT_NOPROXY, proxy.excludedHosts.joined(separator: ",")))
        if let credential = proxy.credential {
            check("PROXYUSERNAME", herald_easy_setopt_string(easy, CURLOPT_PROXYUSERNAME, credential.user))
            check("PROXYPASSWORD", herald_easy_setopt_string(easy, CURLOPT_PROXYPASSWORD, credential.password))
            if proxy.kind == .http || proxy.kind == .https {
                check("PROXYAUTH", herald_easy_setopt_long(easy, CURLOPT_PROXYAUTH, herald_curlauth_basic))
            }
        }
    }

    /// Whether an environment variable libcurl reads for a proxy for this transfer's URL is set to something.
    var environmentMayNameProxy: Bool {
        // A C string compared in place: this runs for every transfer.
        Self.proxyVariables(forScheme: request.url.scheme ?? "").contains { name in
            name.withCString { getenv($0).map { $0.pointee != 0 } ?? false }
        }
    }

    /// Whether any environment variable libcurl reads for a proxy for `scheme` (``proxyVariables(forScheme:)``)
    /// is set to something, as `lookup` reads them. libcurl treats an empty value as unset.
    static func environmentMayNameProxy(forScheme scheme: String, lookup: (String) -> String?) -> Bool {
        proxyVariables(forScheme: scheme).contains { lookup($0).map { !$0.isEmpty } ?? false }
    }

    /// The environment variables libcurl reads for a proxy for `scheme`: `<scheme>_proxy`, its upper-case
    /// form except for `http` (`HTTP_PROXY` is ignored, as a CGI program would find a request header
    /// there), `all_proxy` and `ALL_PROXY`.
    static func proxyVariables(forScheme scheme: String) -> [String] {
        switch scheme {
        case "http": return httpProxyVariables
        case "https": return httpsProxyVariables
        default:
            let lower = scheme.lowercased() + "_proxy"
            var names = [lower, "all_proxy", "ALL_PROXY"]
            if lower != "http_proxy" { names.append(lower.uppercased()) }
            return names
        }
    }

    private static let httpProxyVariables = ["http_proxy", "all_proxy", "ALL_PROXY"]
    private static let httpsProxyVariables = ["https_proxy", "all_proxy", "ALL_PROXY", "HTTPS_PROXY"]
}
