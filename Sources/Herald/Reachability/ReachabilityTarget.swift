import Foundation
import HeraldEngine

/// What a reachability check is about: the network in general, or one address.
enum ReachabilityTarget: Hashable, Sendable {
    /// Any network: a default route through an interface that is up (the general status).
    case anyNetwork
    /// One IP address: the route the kernel picks for it. `family` is `AF_INET` (4 bytes) or `AF_INET6` (16).
    case address(family: Int32, bytes: [UInt8])

    /// The target for a request to `url`: its host's (``init(host:)``), or any network when the request goes
    /// through a proxy — the connection that failed was the proxy's — which is `proxy` unless it excludes the
    /// host, or one the environment may name (`proxyFromEnvironment`).
    init(url: URL, proxy: ProxySettings?, proxyFromEnvironment: Bool) {
        let host = url.host ?? ""
        let throughProxy = proxy.map { !$0.noProxy.bypasses(host: host) } ?? proxyFromEnvironment
        self = throughProxy ? .anyNetwork : ReachabilityTarget(host: host)
    }

    /// The target for `host`, a URL's host: an IPv4 or IPv6 address (brackets allowed) follows that address's
    /// route; `localhost` and names under `.localhost` follow 127.0.0.1's, as curl resolves them without asking
    /// a name server; any other name follows the general status, since finding its address needs a network.
    /// IPv4 is read in every form curl reads a URL's host in (`127.1`, `0x7f000001`, octal parts), and an
    /// IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) follows its IPv4 address's route, as its packets do.
    init(host: String) {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let lowercased = host.lowercased()
        if lowercased == "localhost" || lowercased.hasSuffix(".localhost") {
            self = .address(family: AF_INET, bytes: [127, 0, 0, 1])
            return
        }
        var v4 = in_addr()
        // inet_aton: the forms `inet_pton` refuses and curl normalizes (a URL's host has no space, after which
        // glibc's would stop reading).
        if !host.isEmpty, !host.contains(where: \.isWhitespace), inet_aton(host, &v4) != 0 {
            self = .address(family: AF_INET, bytes: withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        // A zone (`fe80::1%eth0`) is not part of the address the kernel routes.
        let address = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
        if inet_pton(AF_INET6, address, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            if bytes.prefix(12) == Self.ipv4MappedPrefix[...] {
                self = .address(family: AF_INET, bytes: Array(bytes.suffix(4)))
            } else {
                self = .address(family: AF_INET6, bytes: bytes)
            }
            return
        }
        self = .anyNetwork
    }

    /// The first 12 bytes of an IPv4-mapped IPv6 address (RFC 4291 §2.5.5.2): `::ffff:0:0/96`.
    private static let ipv4MappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
}
