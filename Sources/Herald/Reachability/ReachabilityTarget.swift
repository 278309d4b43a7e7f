import Foundation

/// What a reachability check is about: the network in general, or one address.
enum ReachabilityTarget: Hashable, Sendable {
    /// Any network: a default route through an interface that is up (the general status).
    case anyNetwork
    /// One IP address: the route the kernel picks for it. `family` is `AF_INET` (4 bytes) or `AF_INET6` (16).
    case address(family: Int32, bytes: [UInt8])

    /// The target for `host`, a URL's host: an IPv4 or IPv6 address (brackets allowed) follows that address's
    /// route; `localhost` and names under `.localhost` follow 127.0.0.1's, as curl resolves them without asking
    /// a name server; any other name follows the general status, since finding its address needs a network.
    init(host: String) {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let lowercased = host.lowercased()
        if lowercased == "localhost" || lowercased.hasSuffix(".localhost") {
            self = .address(family: AF_INET, bytes: [127, 0, 0, 1])
            return
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            self = .address(family: AF_INET, bytes: withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        // A zone (`fe80::1%eth0`) is not part of the address the kernel routes.
        let address = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
        if inet_pton(AF_INET6, address, &v6) == 1 {
            self = .address(family: AF_INET6, bytes: withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        self = .anyNetwork
    }
}
