import CNetlink
import Foundation
import HeraldNetlink
import HeraldNotifications
import Testing

@testable import Herald
import HeraldEngine

/// The routing-netlink decoder and the table it feeds, on messages built here: no socket, no namespace.
@Suite("routing netlink messages and the reachability they make")
struct NetworkTableTests {
    /// A netlink message: header, family header, then attributes (type, value), each padded to 4 bytes.
    static func message(
        type: Int32, flags: UInt16 = 0, sequence: UInt32 = 0, header: [UInt8], attributes: [(UInt16, [UInt8])] = []
    ) -> [UInt8] {
        var body = header
        while body.count % 4 != 0 { body.append(0) }
        for (kind, value) in attributes {
            body += le(UInt16(4 + value.count)) + le(kind) + value
            while body.count % 4 != 0 { body.append(0) }
        }
        return le(UInt32(16 + body.count)) + le(UInt16(type)) + le(flags) + le(sequence) + le(UInt32(0)) + body
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func link(
        index: Int32, name: String, flags: UInt32, hardware: Int32 = ARPHRD_ETHER, kind: String? = nil,
        family: UInt8 = UInt8(AF_UNSPEC), type: Int32 = Int32(RTM_NEWLINK)
    ) -> [UInt8] {
        // ifinfomsg: family, pad, type, index, flags, change.
        let header = [family, 0] + le(UInt16(hardware)) + le(index) + le(flags) + le(UInt32(0))
        var attributes: [(UInt16, [UInt8])] = [(UInt16(IFLA_IFNAME), Array(name.utf8) + [0])]
        if let kind {
            let nested = le(UInt16(4 + kind.utf8.count + 1)) + le(UInt16(IFLA_INFO_KIND)) + Array(kind.utf8) + [0]
            attributes.append((UInt16(IFLA_LINKINFO), nested + Array(repeating: 0, count: (4 - nested.count % 4) % 4)))
        }
        return message(type: type, header: header, attributes: attributes)
    }

    static func defaultRoute(
        through index: Int32, priority: UInt32 = 0, family: UInt8 = UInt8(AF_INET), removed: Bool = false
    )
        -> [UInt8]
    {
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        let header = [family, 0, 0, 0, UInt8(RT_TABLE_MAIN.rawValue), 3, 0, UInt8(RTN_UNICAST)] + le(UInt32(0))
        return message(
            type: Int32(removed ? RTM_DELROUTE : RTM_NEWROUTE), header: header,
            attributes: [(UInt16(RTA_OIF.rawValue), le(index)), (UInt16(RTA_PRIORITY.rawValue), le(priority))])
    }

    static let up = UInt32(IFF_UP.rawValue) | UInt32(IFF_RUNNING.rawValue) | UInt32(IFF_LOWER_UP.rawValue)

    static func decode(_ bytes: [UInt8]) -> [NetlinkMessage] {
        bytes.withUnsafeBytes { NetlinkDecoder.messages(in: $0) }
    }

    static func table(_ datagrams: [UInt8]...) -> NetworkTable {
        var table = NetworkTable()
        table.classify = { NetworkTable.kind(of: $0) }
        for datagram in datagrams { for message in decode(datagram) { _ = table.apply(message.event) } }
        return table
    }

    @Test("a link message decodes to its index, name, flags, link layer and driver kind")
    func decodesLink() {
        let messages = Self.decode(
            Self.link(index: 7, name: "wg0", flags: Self.up, hardware: ARPHRD_NONE, kind: "wireguard"))
        #expect(
            messages == [
                NetlinkMessage(
                    sequence: 0,
                    event: .link(
                        NetlinkLink(
                            index: 7, name: "wg0", flags: Self.up, hardwareType: UInt16(ARPHRD_NONE), kind: "wireguard")
                    ))
            ])
    }

    @Test("a bridge's messages about its ports are not the links': a port leaving it keeps its default route")
    func bridgePortMessagesIgnored() {
        let bridged = Self.link(
            index: 2, name: "eth0", flags: Self.up, family: UInt8(AF_BRIDGE), type: Int32(RTM_DELLINK))
        #expect(Self.decode(bridged).isEmpty)
        let table = Self.table(
            Self.link(index: 2, name: "eth0", flags: Self.up), Self.defaultRoute(through: 2), bridged)
        #expect(table.status == .reachable(NetworkInterface(name: "eth0", index: 2, kind: .ethernet)))
    }

    @Test("several messages in one datagram decode in order; a message running past the end stops the decoding")
    func decodesDatagram() {
        let done = Self.message(type: NLMSG_DONE, flags: UInt16(NLM_F_DUMP_INTR), sequence: 9, header: [0, 0, 0, 0])
        let datagram = Self.link(index: 2, name: "eth0", flags: Self.up) + Self.defaultRoute(through: 2) + done
        let events = Self.decode(datagram).map(\.event)
        #expect(events.count == 3)
        #expect(events.last == .done(interrupted: true))
        // An error in the end's payload: the dump stopped part of the way. Before, it was taken as complete.
        let failed = Self.message(type: NLMSG_DONE, sequence: 9, header: Self.le(Int32(-ENOMEM)))
        #expect(Self.decode(failed).map(\.event) == [.done(interrupted: true)])
        let succeeded = Self.message(type: NLMSG_DONE, sequence: 9, header: [0, 0, 0, 0])
        #expect(Self.decode(succeeded).map(\.event) == [.done(interrupted: false)])
        // The mark is read on any message of a dump: the kernel sets it where it noticed the change.
        let marked = Self.message(
            type: Int32(RTM_NEWLINK), flags: UInt16(NLM_F_DUMP_INTR), sequence: 9,
            header: [UInt8(0), 0] + Self.le(UInt16(ARPHRD_ETHER)) + Self.le(Int32(3)) + Self.le(Self.up)
                + Self.le(UInt32(0)),
            attributes: [(UInt16(IFLA_IFNAME), Array("eth1".utf8) + [0])])
        let unmarked = Self.link(index: 2, name: "eth0", flags: Self.up)
        #expect(Self.decode(marked + unmarked).map(\.isDumpInterrupted) == [true, false])
        var cut = datagram
        cut.removeLast(done.count + 3)
        // The route's length now runs past the datagram: only the link is read.
        #expect(Self.decode(cut).count == 1)
        // Garbage of every length up to a header and a half decodes to nothing, without trapping.
        for length in 0..<24 { #expect(Self.decode(Array(repeating: 0xFF, count: length)).isEmpty) }
    }

    @Test("reachable through the default route's interface when it is up with a carrier and not loopback")
    func generalStatus() {
        let lo = Self.link(
            index: 1, name: "lo", flags: Self.up | UInt32(IFF_LOOPBACK.rawValue), hardware: ARPHRD_LOOPBACK)
        let eth = Self.link(index: 2, name: "eth0", flags: Self.up)
        #expect(Self.table(lo, eth).status == .notReachable)
        #expect(Self.table(lo, Self.defaultRoute(through: 1)).status == .notReachable)
        let reachable = Self.table(lo, eth, Self.defaultRoute(through: 2))
        #expect(reachable.status == .reachable(NetworkInterface(name: "eth0", index: 2, kind: .ethernet)))
        // No carrier: up, not running.
        let noCarrier = Self.link(index: 2, name: "eth0", flags: UInt32(IFF_UP.rawValue))
        #expect(Self.table(lo, eth, Self.defaultRoute(through: 2), noCarrier).status == .notReachable)
        // The route removed.
        #expect(
            Self.table(eth, Self.defaultRoute(through: 2), Self.defaultRoute(through: 2, removed: true)).status
                == .notReachable)
        // The link removed takes its routes along.
        let removed = Self.message(
            type: Int32(RTM_DELLINK), header: Array(Self.link(index: 2, name: "eth0", flags: 0)[16..<32]))
        #expect(Self.table(eth, Self.defaultRoute(through: 2), removed).status == .notReachable)
    }

    @Test("the default route with the lowest metric wins, IPv4 before IPv6 at equal metrics")
    func preferredRoute() {
        let eth = Self.link(index: 2, name: "eth0", flags: Self.up)
        let vpn = Self.link(index: 3, name: "tun0", flags: Self.up, hardware: ARPHRD_NONE, kind: "tun")
        let table = Self.table(
            eth, vpn, Self.defaultRoute(through: 2, priority: 100), Self.defaultRoute(through: 3, priority: 50))
        #expect(table.status == .reachable(NetworkInterface(name: "tun0", index: 3, kind: .tunnel)))
        let tie = Self.table(
            eth, vpn, Self.defaultRoute(through: 3, family: UInt8(AF_INET6)), Self.defaultRoute(through: 2))
        #expect(tie.status.interface?.name == "eth0")
    }

    @Test("link kinds: loopback, tunnels by driver and link layer, cellular raw IP, ethernet")
    func kinds() {
        func kind(_ hardware: Int32, _ driver: String? = nil, flags: UInt32 = 0) -> NetworkInterfaceKind {
            NetworkTable.kind(
                of: NetlinkLink(index: 1, name: "", flags: flags, hardwareType: UInt16(hardware), kind: driver))
        }
        #expect(kind(ARPHRD_LOOPBACK) == .loopback)
        #expect(kind(ARPHRD_ETHER, "wireguard") == .tunnel)
        #expect(kind(ARPHRD_ETHER, "tun") == .tunnel)
        #expect(kind(ARPHRD_NONE) == .tunnel)
        #expect(kind(ARPHRD_PPP) == .tunnel)
        #expect(kind(ARPHRD_RAWIP) == .cellular)
        #expect(kind(ARPHRD_ETHER, "wwan") == .cellular)
        #expect(kind(ARPHRD_ETHER, "veth") == .ethernet)
        #expect(kind(ARPHRD_INFINIBAND) == .other)
    }

    @Test("a host's target: IP literals follow their address, localhost follows 127.0.0.1, names the network")
    func targets() {
        #expect(ReachabilityTarget(host: "10.1.2.3") == .address(family: AF_INET, bytes: [10, 1, 2, 3]))
        #expect(ReachabilityTarget(host: "localhost") == .address(family: AF_INET, bytes: [127, 0, 0, 1]))
        #expect(ReachabilityTarget(host: "api.localhost") == .address(family: AF_INET, bytes: [127, 0, 0, 1]))
        #expect(
            ReachabilityTarget(host: "[::1]") == .address(family: AF_INET6, bytes: Array(repeating: 0, count: 15) + [1])
        )
        #expect(ReachabilityTarget(host: "example.com") == .anyNetwork)
        #expect(ReachabilityTarget(host: "") == .anyNetwork)
        // IPv4 in the forms curl reads (it connects to 127.0.0.1 for each), and mapped into IPv6.
        for host in ["127.1", "0x7f000001", "0177.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "::FFFF:7f00:1"] {
            #expect(ReachabilityTarget(host: host) == .address(family: AF_INET, bytes: [127, 0, 0, 1]), "\(host)")
        }
        #expect(ReachabilityTarget(host: "1e100.invalid") == .anyNetwork)
        #expect(ReachabilityTarget(host: "127.0.0.1 x") == .anyNetwork)
    }

    @Test("a request's target: through a proxy any network, unless the proxy excludes the host")
    func requestTargets() throws {
        let url = try #require(URL(string: "http://127.1.2.3:8080/a"))
        let host = ReachabilityTarget.address(family: AF_INET, bytes: [127, 1, 2, 3])
        func proxy(excluding hosts: [String]) -> ProxySettings {
            ProxySettings(
                url: "http://127.0.0.1:3128", excludedHosts: hosts, user: nil, password: nil, speaksHTTP: true)
        }
        #expect(ReachabilityTarget(url: url, proxy: nil, proxyFromEnvironment: false) == host)
        #expect(ReachabilityTarget(url: url, proxy: nil, proxyFromEnvironment: true) == .anyNetwork)
        #expect(ReachabilityTarget(url: url, proxy: proxy(excluding: []), proxyFromEnvironment: false) == .anyNetwork)
        // Before, a session's proxy made every request wait for any network, the hosts it reaches directly too.
        let excluding = proxy(excluding: ["127.0.0.0/8"])
        #expect(ReachabilityTarget(url: url, proxy: excluding, proxyFromEnvironment: false) == host)
        #expect(ReachabilityTarget(url: url, proxy: proxy(excluding: ["*"]), proxyFromEnvironment: false) == host)
        #expect(
            ReachabilityTarget(url: url, proxy: proxy(excluding: ["example.com"]), proxyFromEnvironment: false)
                == .anyNetwork)
    }

    @Test("statuses have bounded labels and AFNetworking-style descriptions")
    func descriptions() {
        let wifi = NetworkReachabilityStatus.reachable(NetworkInterface(name: "wlan0", index: 3, kind: .wireless))
        #expect(wifi.label == "reachable_via_wireless")
        #expect(wifi.localizedDescription == "Reachable via Wi-Fi (wlan0)")
        #expect(NetworkReachabilityStatus.notReachable.localizedDescription == "Not Reachable")
        #expect(NetworkReachabilityStatus.unknown.label == "unknown")
    }

    @Test("a debounce interval says the delay it gets: negative and NaN are 0, past an hour an hour")
    func debounceIntervalBounds() {
        let center = NotificationHub()
        #expect(NetworkReachability(notificationCenter: center, debounceInterval: -1).debounceInterval == 0)
        #expect(NetworkReachability(notificationCenter: center, debounceInterval: .nan).debounceInterval == 0)
        #expect(NetworkReachability(notificationCenter: center, debounceInterval: 1.5).debounceInterval == 1.5)
        // Before, it said 86,400 while the monitor waited an hour.
        #expect(
            NetworkReachability(host: "127.0.0.1", notificationCenter: center, debounceInterval: 86_400)
                .debounceInterval == NetworkReachability.maximumDebounceInterval)
    }
}
