import CNetlink
import Foundation
import HeraldNetlink

/// The kernel's links and default routes as the routing netlink reported them, and the reachability they
/// make: a value, fed decoded messages in the order they arrived.
///
/// Only default routes are kept (the general status depends on nothing else); a host's reachability is the
/// kernel's own answer for its address (see ``status(forRoute:)``). Loop thread of the monitor that owns it.
struct NetworkTable {
    /// Links by index, each with its kind (read once per change of the link).
    private(set) var links: [Int32: (link: NetlinkLink, kind: NetworkInterfaceKind)] = [:]
    /// Default routes, keyed by what tells two apart.
    private(set) var defaultRoutes: [RouteKey: NetlinkRoute] = [:]

    /// What tells two routes apart, as the kernel does for a replace or a delete: the flags and the type of
    /// a route change in place.
    struct RouteKey: Hashable {
        var family: UInt8
        var table: UInt32
        var destination: [UInt8]
        var destinationLength: UInt8
        var priority: UInt32
        var outputLink: Int32?

        init(_ route: NetlinkRoute) {
            (family, table, destination) = (route.family, route.table, route.destination)
            (destinationLength, priority, outputLink) = (route.destinationLength, route.priority, route.outputLink)
        }
    }

    /// How a link's kind is found: the link itself, and `/sys/class/net` by default.
    var classify: @Sendable (NetlinkLink) -> NetworkInterfaceKind = NetworkTable.kind(of:)

    /// Applies one message. Returns whether the routes must be read again: IPv4 routes through a link that
    /// goes down, or that use an address that goes away, are removed by the kernel without a message, and a
    /// default route's change may stand for more than it says (see below).
    mutating func apply(_ event: NetlinkMessage.Event) -> Bool {
        switch event {
        case .link(let link):
            let old = links[link.index]
            // The kind is read again only when what it is read from changed (sysfs costs system calls).
            let kind =
                if let old, old.link.name == link.name, old.link.kind == link.kind,
                    old.link.hardwareType == link.hardwareType
                {
                    old.kind
                } else {
                    classify(link)
                }
            links[link.index] = (link, kind)
            let up = UInt32(IFF_UP.rawValue)
            return old.map { $0.link.flags & up != link.flags & up } ?? false
        case .linkRemoved(let index):
            links[index] = nil
            defaultRoutes = defaultRoutes.filter { $0.value.outputLink != index }
            return false
        case .address(_, let removed):
            return removed
        case .route(let route, let removed):
            guard route.isDefault else { return false }
            defaultRoutes[RouteKey(route)] = removed ? nil : route
            // Applied at once, then read again: a replace (`ip route replace`) announces only the new route, not
            // the one it took the place of, and two default routes through one link that differ by gateway alone
            // share a key here; the kernel's list settles both. Default routes change rarely.
            return true
        case .done, .error:
            return false
        }
    }

    /// Forgets every route, before a dump of the routes replaces them.
    mutating func removeAllRoutes() { defaultRoutes = [:] }

    /// Forgets everything, before a full dump.
    mutating func removeAll() {
        links = [:]
        defaultRoutes = [:]
    }

    /// The general status: reachable through the interface of the preferred default route (the lowest
    /// metric; IPv4 before IPv6 at equal metrics) among those that deliver through an interface that is up,
    /// has a carrier, and is not loopback.
    var status: NetworkReachabilityStatus {
        let usable = defaultRoutes.values.filter { route in
            guard route.type == UInt8(RTN_UNICAST), route.delivers, route.table != UInt32(RT_TABLE_LOCAL.rawValue),
                let index = route.outputLink, let entry = links[index]
            else { return false }
            return entry.link.isOperational && !entry.link.isLoopback
        }
        let best = usable.min { a, b in
            (a.priority, a.family == UInt8(AF_INET) ? 0 : 1, a.outputLink ?? 0)
                < (b.priority, b.family == UInt8(AF_INET) ? 0 : 1, b.outputLink ?? 0)
        }
        guard let best, let index = best.outputLink, let entry = links[index] else { return .notReachable }
        return .reachable(NetworkInterface(name: entry.link.name, index: Int(index), kind: entry.kind))
    }

    /// A host's status from the route the kernel picked for its address (`nil`: the kernel answered that it
    /// has none): reachable when the route delivers through a link that is up with a carrier. A host's
    /// route may go through loopback: the host is this machine.
    func status(forRoute route: NetlinkRoute?) -> NetworkReachabilityStatus {
        guard let route, route.delivers, let index = route.outputLink, let entry = links[index],
            entry.link.isOperational
        else { return .notReachable }
        return .reachable(NetworkInterface(name: entry.link.name, index: Int(index), kind: entry.kind))
    }

    /// A link's kind, from its link layer type, its driver's kind and `/sys/class/net`.
    static func kind(of link: NetlinkLink) -> NetworkInterfaceKind {
        if link.isLoopback { return .loopback }
        if let kind = link.kind {
            switch kind {
            case "tun", "wireguard", "ipip", "gre", "ip6gre", "sit", "ip6tnl", "vti", "vti6", "xfrm", "ovpn-dco":
                // A TAP device is a "tun" link that carries ethernet frames; it is still a tunnel.
                return .tunnel
            case "wwan": return .cellular
            default: break
            }
        }
        switch Int32(link.hardwareType) {
        case ARPHRD_NONE, ARPHRD_TUNNEL, ARPHRD_TUNNEL6, ARPHRD_SIT, ARPHRD_IPGRE, ARPHRD_IP6GRE, ARPHRD_PPP:
            return .tunnel
        case ARPHRD_RAWIP:
            return .cellular
        case ARPHRD_IEEE80211, ARPHRD_IEEE80211_PRISM, ARPHRD_IEEE80211_RADIOTAP:
            return .wireless
        case ARPHRD_ETHER:
            break
        default:
            return .other
        }
        // Wireless cards and most modems are ethernet to the link layer: sysfs tells them apart.
        let folder = "/sys/class/net/\(link.name)"
        guard !link.name.isEmpty, !link.name.contains("/"), link.name != "." && link.name != ".." else {
            return .ethernet
        }
        if FileManager.default.fileExists(atPath: folder + "/wireless")
            || FileManager.default.fileExists(atPath: folder + "/phy80211")
        {
            return .wireless
        }
        if let uevent = try? String(contentsOfFile: folder + "/uevent", encoding: .utf8),
            uevent.split(separator: "\n").contains("DEVTYPE=wwan")
        {
            return .cellular
        }
        return .ethernet
    }
}
