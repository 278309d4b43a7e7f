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
        check("PROXY", herald_easy_setopt_string(easy, CURLOPT_PROXY, proxy.url))
        configureNoProxy(easy, check: check)
        if let user = proxy.user {
            check("PROXYUSERNAME", herald_easy_setopt_string(easy, CURLOPT_PROXYUSERNAME, user))
            check("PROXYPASSWORD", herald_easy_setopt_string(easy, CURLOPT_PROXYPASSWORD, proxy.password ?? ""))
            if proxy.speaksHTTP {
                check("PROXYAUTH", herald_easy_setopt_long(easy, CURLOPT_PROXYAUTH, herald_curlauth_basic))
            }
        }
    }

    /// Tells libcurl whether this transfer's host goes direct (`*`) or through the session's proxy (`""`, which
    /// also keeps libcurl from reading the `no_proxy` environment variable): ``NoProxyRules`` decides, whatever
    /// libcurl's version. Per transfer, as the host changes with each hop; nothing without an explicit proxy.
    func configureNoProxy(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        guard let proxy = request.proxy else { return }
        let direct = proxy.noProxy.bypasses(host: request.url.host ?? "")
        check("NOPROXY", herald_easy_setopt_string(easy, CURLOPT_NOPROXY, direct ? "*" : ""))
    }

    /// Whether an environment variable libcurl reads for a proxy for this transfer's URL is set to something.
    var environmentMayNameProxy: Bool {
        Self.environmentMayNameProxy(forScheme: request.url.scheme ?? "", entries: UnsafePointer(environ))
    }

    /// Whether `entries` (a list of `NAME=value` C strings ended by a null pointer, as `environ`) sets any
    /// variable libcurl reads for a proxy for `scheme` (``proxyVariables(forScheme:)``) to something. libcurl
    /// treats an empty value as unset.
    ///
    /// One pass over the list, comparing in place: this runs for every transfer, and `getenv` for each of
    /// the three or four names would walk the whole environment each time. An entry whose first byte starts
    /// no name is passed over at once.
    static func environmentMayNameProxy(
        forScheme scheme: String, entries: UnsafePointer<UnsafeMutablePointer<CChar>?>?
    ) -> Bool {
        guard var entry = entries else { return false }
        let names = ProxyVariableNames.forScheme(scheme)
        while let variable = entry.pointee {
            if names.mayStart(variable[0]), names.isSet(by: variable) { return true }
            entry += 1
        }
        return false
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

/// The names ``Transfer/proxyVariables(forScheme:)`` lists for one scheme, as C strings, and the bytes they start
/// with; made once for `http` and `https`.
struct ProxyVariableNames: Sendable {
    private let names: [ContiguousArray<CChar>]
    /// Bit `b` set when a name starts with the ASCII byte `b`.
    private let firstBytes: (low: UInt64, high: UInt64)

    private init(_ names: [String]) {
        self.names = names.map { $0.utf8CString }
        var low: UInt64 = 0
        var high: UInt64 = 0
        for name in names {
            guard let first = name.utf8.first, first < 128 else { continue }
            if first < 64 { low |= 1 << first } else { high |= 1 << (first - 64) }
        }
        firstBytes = (low, high)
    }

    private static let http = ProxyVariableNames(Transfer.proxyVariables(forScheme: "http"))
    private static let https = ProxyVariableNames(Transfer.proxyVariables(forScheme: "https"))

    static func forScheme(_ scheme: String) -> ProxyVariableNames {
        switch scheme {
        case "http": return http
        case "https": return https
        default: return ProxyVariableNames(Transfer.proxyVariables(forScheme: scheme))
        }
    }

    /// Whether some name starts with `byte`.
    func mayStart(_ byte: CChar) -> Bool {
        let value = UInt8(bitPattern: byte)
        guard value < 128 else { return false }
        return value < 64 ? firstBytes.low & (1 << value) != 0 : firstBytes.high & (1 << (value - 64)) != 0
    }

    /// Whether the C string `entry` is one of the names, `=` and at least one more byte.
    func isSet(by entry: UnsafeMutablePointer<CChar>) -> Bool {
        for name in names {
            let matches = name.withUnsafeBufferPointer { name in
                // `strncmp` stops at the entry's end; the name's length excludes its NUL.
                let length = name.count - 1
                guard let start = name.baseAddress, strncmp(entry, start, length) == 0 else { return false }
                return entry[length] == 0x3D && entry[length + 1] != 0
            }
            if matches { return true }
        }
        return false
    }
}
