import Foundation
import HeraldEngine

/// An explicit proxy for a session (``SessionConfiguration/proxy``): HTTP, HTTPS or SOCKS5, with optional
/// credentials and a list of hosts reached directly.
///
/// When a session has one, it is used for every request whose host is not in ``excludedHosts`` —
/// loopback addresses included — and libcurl's proxy environment variables (`http_proxy`, `https_proxy`,
/// `all_proxy`, `no_proxy` and their uppercase forms) are ignored. Without one
/// (``SessionConfiguration/proxy`` `nil`, the default), libcurl reads those variables for every request,
/// as the `curl` tool does: `http_proxy` for `http` URLs (lowercase only), `https_proxy` for `https`,
/// `all_proxy` for both when the specific one is unset, and `no_proxy` as a comma-separated list of hosts
/// (or `*`) reached directly.
///
/// Requests to `https` URLs go through the proxy in a tunnel (`CONNECT`), so the proxy sees the host and
/// port but not the request; `http` URLs are sent to an HTTP or HTTPS proxy in full. The session's
/// ``SecurityPolicy`` applies to the server; an HTTPS proxy's own certificate is verified against the
/// system's certificate authorities.
///
/// Give the proxy its credential here (``credential``), not as a `Proxy-Authorization` field of a request or of
/// ``SessionConfiguration/httpAdditionalHeaders``: request fields go where the request goes, so such a field
/// reaches the origin server itself for `https` URLs (inside the tunnel, whose `CONNECT` doesn't carry it), for
/// hosts in ``excludedHosts`` and without a proxy at all.
public struct Proxy: Sendable, Hashable, CustomStringConvertible {
    /// How Herald talks to the proxy.
    public enum Kind: String, Sendable, Hashable {
        /// A plain-text HTTP proxy.
        case http
        /// An HTTP proxy reached over TLS. Its certificate is checked against the system's trust store (the
        /// session's ``SecurityPolicy`` is for servers); one that fails the check fails the task with
        /// ``HeraldError/Code/proxy``.
        case https
        /// A SOCKS5 proxy; host names are resolved locally.
        case socks5
        /// A SOCKS5 proxy that resolves host names itself.
        case socks5Hostname = "socks5h"
    }

    /// The kind of proxy.
    public var kind: Kind
    /// The proxy's host name or IP address (an IPv6 address without brackets).
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The credential sent to the proxy (HTTP Basic for HTTP/HTTPS proxies, user/password for SOCKS5), or
    /// `nil`.
    public var credential: Credential?
    /// Hosts reached without the proxy: names (`example.com` also covers its subdomains; a leading dot or `*.`
    /// is allowed and means the same), IP addresses (IPv6 with or without brackets), CIDR ranges (`10.0.0.0/8`, `fd00::/8`), or `*`
    /// for every host. Empty (the default) sends every request through the proxy, loopback addresses included.
    ///
    /// Herald decides for each request, the same with every libcurl (whose own rules changed over its versions):
    /// names are compared with the URL's host as written, ignoring case, and addresses and ranges match a URL
    /// whose host is an IP address (an IPv4-mapped IPv6 host as its IPv4 address; a name is never looked up for
    /// it). An entry with a port, a `*` elsewhere than alone or leading (`*.`), or a range whose prefix doesn't
    /// fit its address, is refused by ``validate()``.
    public var excludedHosts: [String]

    /// Creates a proxy.
    /// - Parameters:
    ///   - kind: The kind of proxy.
    ///   - host: Its host name or IP address.
    ///   - port: Its port.
    ///   - credential: What to authenticate with, if anything; default none.
    ///   - excludedHosts: Hosts reached directly; default none.
    public init(kind: Kind, host: String, port: Int, credential: Credential? = nil, excludedHosts: [String] = []) {
        self.kind = kind
        self.host = host
        self.port = port
        self.credential = credential
        self.excludedHosts = excludedHosts
    }

    /// `kind://host:port`, without the credential.
    public var description: String { "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Checks what libcurl would otherwise misread: an empty host, a host with a `:` that is not an IPv6 address
    /// (a port written into it) or with brackets (an IPv6 address is given bare: ``description`` brackets it), a
    /// port out of range, and control characters, commas or whitespace where they would split or end an
    /// option's value.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest``.
    public func validate() throws(HeraldError) {
        guard !host.isEmpty, !host.unicodeScalars.contains(where: Self.isForbiddenInHost) else {
            throw HeraldError(.invalidRequest, "The proxy host '\(host)' is not a host name or address.")
        }
        if host.contains("[") || host.contains("]") || (host.contains(":") && !Self.isIPv6Address(host)) {
            throw HeraldError(
                .invalidRequest,
                "The proxy host '\(host)' is not a host name or address: give an IPv6 address without brackets, "
                    + "and the port as the port.")
        }
        guard (1...65_535).contains(port) else {
            throw HeraldError(.invalidRequest, "The proxy port \(port) is out of range.")
        }
        for entry in excludedHosts
        where entry.isEmpty || entry.unicodeScalars.contains(where: Self.isSeparatorOrControl) {
            throw HeraldError(.invalidRequest, "The no-proxy entry '\(entry)' is not a host, address or range.")
        }
        for entry in excludedHosts {
            if let problem = NoProxyRules.problem(in: entry) {
                throw HeraldError(.invalidRequest, "The no-proxy entry '\(entry)' can't be used: \(problem).")
            }
        }
        if let credential, credential.hasControlCharacter {
            throw HeraldError(.invalidRequest, "The proxy credential contains a control character.")
        }
    }

    /// Whether `text` is an IPv6 address, with a zone (`fe80::1%eth0`) or without.
    private static func isIPv6Address(_ text: String) -> Bool {
        NoProxyRules.parseAddress(text)?.family == AF_INET6
    }

    private static func isSeparatorOrControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 0x20 || scalar.value == 0x7F || scalar == ","
    }

    private static func isForbiddenInHost(_ scalar: Unicode.Scalar) -> Bool {
        isSeparatorOrControl(scalar) || "@/?#".unicodeScalars.contains(scalar)
    }
}
