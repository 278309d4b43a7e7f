/// Whether the network is reachable, and through which interface: what a ``NetworkReachability`` reports.
///
/// AFNetworking's `AFNetworkReachabilityStatus` (unknown, not reachable, via WWAN, via Wi-Fi), with the
/// interface itself instead of two fixed kinds: on Linux a server's route may go through ethernet, a
/// wireless card, a cellular modem or a VPN tunnel.
public enum NetworkReachabilityStatus: Sendable, Hashable, CustomStringConvertible {
    /// Not known yet: monitoring has not started, or has not read the kernel's tables.
    case unknown
    /// Nothing is reachable: no default route through an interface that is up with a carrier (for a host:
    /// the kernel has no route to its address). The loopback interface alone is not a network.
    case notReachable
    /// Reachable through `interface`: the interface of the preferred default route (for a host: of the
    /// route the kernel picks for its address).
    case reachable(NetworkInterface)

    /// Whether the status is ``reachable(_:)``.
    public var isReachable: Bool {
        if case .reachable = self { return true }
        return false
    }

    /// The interface packets leave through, when reachable.
    public var interface: NetworkInterface? {
        if case .reachable(let interface) = self { return interface }
        return nil
    }

    /// A short, stable label: `unknown`, `not_reachable`, or `reachable_via_` and the interface's kind
    /// (`reachable_via_ethernet`, `reachable_via_wireless` …). Bounded, so safe as a metric dimension.
    public var label: String {
        switch self {
        case .unknown: "unknown"
        case .notReachable: "not_reachable"
        case .reachable(let interface): "reachable_via_\(interface.kind)"
        }
    }

    /// A sentence for people, AFNetworking's `AFStringFromNetworkReachabilityStatus`: "Unknown",
    /// "Not Reachable", or "Reachable via Ethernet (eth0)". English only: Herald ships no translations.
    public var localizedDescription: String {
        switch self {
        case .unknown: "Unknown"
        case .notReachable: "Not Reachable"
        case .reachable(let interface): "Reachable via \(interface.kind.displayName) (\(interface.name))"
        }
    }

    /// The same as ``label``.
    public var description: String { label }
}

/// A network interface a route goes through.
public struct NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// The interface's name, such as `eth0`, `wlan0` or `wg0`.
    public let name: String
    /// The kernel's index of the interface.
    public let index: Int
    /// What kind of link it is.
    public let kind: NetworkInterfaceKind

    /// Creates an interface; Herald creates these itself, the initializer is public so observers can be
    /// unit-tested.
    /// - Parameters:
    ///   - name: The interface's name.
    ///   - index: The kernel's index of the interface.
    ///   - kind: What kind of link it is.
    public init(name: String, index: Int, kind: NetworkInterfaceKind) {
        self.name = name
        self.index = index
        self.kind = kind
    }

    /// `name (kind)`, such as `eth0 (ethernet)`.
    public var description: String { "\(name) (\(kind))" }
}

/// What kind of link a ``NetworkInterface`` is: ethernet, wireless, cellular, a tunnel (VPN), loopback, or
/// other.
///
/// A struct over a private enum, so that kinds can be added without breaking a `switch` in your code. Read
/// from the kernel: the link layer type, the driver's kind (`veth`, `tun`, `wireguard` …), and
/// `/sys/class/net/NAME/wireless` for wireless cards (present only where `/sys` was mounted in the same
/// network namespace as the process).
public struct NetworkInterfaceKind: Sendable, Hashable, CustomStringConvertible {
    private enum Base: Sendable, Hashable {
        case ethernet, wireless, cellular, tunnel, loopback, other
    }

    private let base: Base

    private init(_ base: Base) { self.base = base }

    /// Wired ethernet, and links that look like it to the system: bridges, virtual ethernet pairs (`veth`),
    /// TAP devices.
    public static let ethernet = NetworkInterfaceKind(.ethernet)
    /// A wireless (Wi-Fi) card.
    public static let wireless = NetworkInterfaceKind(.wireless)
    /// A cellular modem (WWAN).
    public static let cellular = NetworkInterfaceKind(.cellular)
    /// A tunnel, usually a VPN: TUN devices, WireGuard, IP-in-IP, GRE, SIT, PPP.
    public static let tunnel = NetworkInterfaceKind(.tunnel)
    /// The loopback interface (`lo`): the machine itself.
    public static let loopback = NetworkInterfaceKind(.loopback)
    /// Anything else.
    public static let other = NetworkInterfaceKind(.other)

    /// A short, stable label: `ethernet`, `wireless`, `cellular`, `tunnel`, `loopback` or `other`.
    public var description: String {
        switch base {
        case .ethernet: "ethernet"
        case .wireless: "wireless"
        case .cellular: "cellular"
        case .tunnel: "tunnel"
        case .loopback: "loopback"
        case .other: "other"
        }
    }

    /// The kind's name in a sentence: "Ethernet", "Wi-Fi", "Cellular", "VPN", "Loopback", "Other".
    var displayName: String {
        switch base {
        case .ethernet: "Ethernet"
        case .wireless: "Wi-Fi"
        case .cellular: "Cellular"
        case .tunnel: "VPN"
        case .loopback: "Loopback"
        case .other: "Other"
        }
    }
}
