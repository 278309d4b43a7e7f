import CCurl
import Foundation

// The session's explicit proxy, applied to each easy handle. Without one nothing is set, and libcurl reads
// its proxy environment variables itself.
extension Transfer {
    /// Sets the proxy, its credential and the hosts reached directly. Loop thread.
    func configureProxy(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        guard let proxy = request.proxy else { return }
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
}
