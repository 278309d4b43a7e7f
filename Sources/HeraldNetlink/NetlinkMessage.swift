import CNetlink

/// A routing-netlink message, decoded to what reachability needs: which links exist and in what state,
/// that an address changed, which routes exist, and the end of a request's answer.
package struct NetlinkMessage: Equatable, Sendable {
    /// The request this answers (`0` for the kernel's announcements).
    package var sequence: UInt32
    /// What the message says.
    package var event: Event
    /// Whether the kernel marked this message `NLM_F_DUMP_INTR`: the tables changed while the dump it belongs
    /// to was read. The kernel marks the message at which it noticed, not every one after it, nor necessarily
    /// the dump's end: a dump is consistent only when none of its messages carries the mark.
    package var isDumpInterrupted: Bool

    package init(sequence: UInt32, event: Event, isDumpInterrupted: Bool = false) {
        self.sequence = sequence
        self.event = event
        self.isDumpInterrupted = isDumpInterrupted
    }

    package enum Event: Equatable, Sendable {
        /// A link exists (`RTM_NEWLINK`: new, or changed).
        case link(NetlinkLink)
        /// A link is gone (`RTM_DELLINK`).
        case linkRemoved(index: Int32)
        /// An address was added to or removed from a link (`RTM_NEWADDR`, `RTM_DELADDR`).
        case address(linkIndex: Int32, removed: Bool)
        /// A route exists, or is gone (`RTM_NEWROUTE`, `RTM_DELROUTE`); also the answer to a route request.
        case route(NetlinkRoute, removed: Bool)
        /// The end of a dump (`NLMSG_DONE`); `interrupted` when the end itself carries `NLM_F_DUMP_INTR` (see
        /// ``NetlinkMessage/isDumpInterrupted`` for the dump's other messages), or the kernel's errno in its
        /// payload: a dump that failed part of the way is as incomplete as one interrupted.
        case done(interrupted: Bool)
        /// An error answer (`NLMSG_ERROR`) with the kernel's errno; `0` is an acknowledgement.
        case error(code: Int32)
    }
}

/// What a link message says about a link.
package struct NetlinkLink: Equatable, Sendable {
    package var index: Int32
    package var name: String
    /// `IFF_*` flags (`IFF_UP`, `IFF_RUNNING`, `IFF_LOOPBACK`, `IFF_LOWER_UP` …).
    package var flags: UInt32
    /// The link layer (`ARPHRD_*`).
    package var hardwareType: UInt16
    /// The driver's kind (`IFLA_INFO_KIND`: "veth", "tun", "wireguard", "bridge" …), when it says one.
    package var kind: String?

    package init(index: Int32, name: String, flags: UInt32, hardwareType: UInt16, kind: String?) {
        (self.index, self.name, self.flags, self.hardwareType, self.kind) = (index, name, flags, hardwareType, kind)
    }

    /// Up, with a carrier: packets can leave through it.
    package var isOperational: Bool {
        flags & UInt32(IFF_UP.rawValue) != 0
            && flags & (UInt32(IFF_RUNNING.rawValue) | UInt32(IFF_LOWER_UP.rawValue)) != 0
    }

    package var isLoopback: Bool {
        flags & UInt32(IFF_LOOPBACK.rawValue) != 0 || hardwareType == UInt16(ARPHRD_LOOPBACK)
    }
}

/// What a route message says about a route.
package struct NetlinkRoute: Hashable, Sendable {
    /// `AF_INET` or `AF_INET6`.
    package var family: UInt8
    package var destination: [UInt8]
    package var destinationLength: UInt8
    /// The table (`RTA_TABLE`, which holds ids above 255, else `rtm_table`).
    package var table: UInt32
    /// `RTN_UNICAST`, `RTN_LOCAL`, `RTN_UNREACHABLE` …
    package var type: UInt8
    /// `RTNH_F_*` flags: `RTNH_F_LINKDOWN`, `RTNH_F_DEAD`.
    package var flags: UInt32
    package var priority: UInt32
    /// The link packets leave through (`RTA_OIF`, or the first hop of `RTA_MULTIPATH`); `nil` when none is named.
    package var outputLink: Int32?

    package init(
        family: UInt8, destination: [UInt8], destinationLength: UInt8, table: UInt32, type: UInt8, flags: UInt32,
        priority: UInt32, outputLink: Int32?
    ) {
        (self.family, self.destination, self.destinationLength, self.table) = (
            family, destination, destinationLength, table
        )
        (self.type, self.flags, self.priority, self.outputLink) = (type, flags, priority, outputLink)
    }

    package var isDefault: Bool { destinationLength == 0 }

    /// Whether the route sends packets somewhere: not a blackhole, an unreachable or a prohibit route. Its
    /// link's carrier is read from the link, not from the route's `RTNH_F_LINKDOWN` flag: the kernel sets
    /// that flag on IPv4 routes without announcing it.
    package var delivers: Bool { type == UInt8(RTN_UNICAST) || type == UInt8(RTN_LOCAL) }
}

/// Decodes the messages of one netlink datagram.
package enum NetlinkDecoder {
    /// The messages in `datagram`, in order. Messages of other types are skipped; a message whose length
    /// runs past the datagram ends the decoding (the kernel never sends one: the rest is unreadable).
    package static func messages(in datagram: UnsafeRawBufferPointer) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var offset = 0
        let headerSize = MemoryLayout<nlmsghdr>.size
        while datagram.count - offset >= headerSize {
            let length = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= headerSize, length <= datagram.count - offset else { break }
            let type = datagram.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
            let flags = datagram.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self)
            let sequence = datagram.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let body = UnsafeRawBufferPointer(rebasing: datagram[(offset + headerSize)..<(offset + length)])
            if let event = event(type: type, flags: flags, body: body) {
                let isDumpInterrupted = flags & UInt16(NLM_F_DUMP_INTR) != 0
                messages.append(NetlinkMessage(sequence: sequence, event: event, isDumpInterrupted: isDumpInterrupted))
            }
            offset += hnl_message_align(length)
        }
        return messages
    }

    private static func event(type: UInt16, flags: UInt16, body: UnsafeRawBufferPointer) -> NetlinkMessage.Event? {
        switch Int32(type) {
        case NLMSG_DONE:
            // Its payload is the dump's result: a negative errno when the kernel stopped it part of the way.
            let failed = body.count >= 4 && body.loadUnaligned(as: Int32.self) < 0
            return .done(interrupted: flags & UInt16(NLM_F_DUMP_INTR) != 0 || failed)
        case NLMSG_ERROR:
            guard body.count >= 4 else { return nil }
            // The kernel's negative errno, or 0 for an acknowledgement.
            // Wrapping: only the kernel writes here, but a negation must not trap on Int32.min.
            return .error(code: 0 &- body.loadUnaligned(as: Int32.self))
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            // A link's own messages are AF_UNSPEC. A bridge sends AF_BRIDGE ones about its ports to the same
            // group: an RTM_DELLINK when a port leaves the bridge, though the link stays (taken as the link's
            // removal, its default routes would be forgotten), and RTM_NEWLINKs without the driver's kind.
            guard body.count >= 1, Int32(body[0]) == AF_UNSPEC, let link = link(body) else { return nil }
            return Int32(type) == Int32(RTM_NEWLINK) ? .link(link) : .linkRemoved(index: link.index)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            guard body.count >= MemoryLayout<ifaddrmsg>.size else { return nil }
            let index = Int32(bitPattern: body.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
            return .address(linkIndex: index, removed: Int32(type) == Int32(RTM_DELADDR))
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            guard let route = route(body) else { return nil }
            return .route(route, removed: Int32(type) == Int32(RTM_DELROUTE))
        default:
            return nil
        }
    }

    /// `ifinfomsg` (family, type, index, flags, change), then attributes.
    private static func link(_ body: UnsafeRawBufferPointer) -> NetlinkLink? {
        let size = MemoryLayout<ifinfomsg>.size
        guard body.count >= size else { return nil }
        var link = NetlinkLink(
            index: body.loadUnaligned(fromByteOffset: 4, as: Int32.self), name: "",
            flags: body.loadUnaligned(fromByteOffset: 8, as: UInt32.self),
            hardwareType: body.loadUnaligned(fromByteOffset: 2, as: UInt16.self), kind: nil)
        forEachAttribute(in: body, from: size) { type, value in
            switch Int32(type) {
            case Int32(IFLA_IFNAME): link.name = string(value)
            case Int32(IFLA_LINKINFO):
                forEachAttribute(in: value, from: 0) { nested, kind in
                    if Int32(nested) == Int32(IFLA_INFO_KIND) { link.kind = string(kind) }
                }
            default: break
            }
        }
        return link
    }

    /// `rtmsg` (family, destination length, source length, tos, table, protocol, scope, type, flags), then
    /// attributes.
    private static func route(_ body: UnsafeRawBufferPointer) -> NetlinkRoute? {
        let size = MemoryLayout<rtmsg>.size
        guard body.count >= size else { return nil }
        var route = NetlinkRoute(
            family: body[0], destination: [], destinationLength: body[1], table: UInt32(body[4]), type: body[7],
            flags: body.loadUnaligned(fromByteOffset: 8, as: UInt32.self), priority: 0, outputLink: nil)
        forEachAttribute(in: body, from: size) { type, value in
            switch type {
            case UInt16(RTA_DST.rawValue): route.destination = Array(value)
            case UInt16(RTA_TABLE.rawValue) where value.count >= 4: route.table = value.loadUnaligned(as: UInt32.self)
            case UInt16(RTA_PRIORITY.rawValue) where value.count >= 4:
                route.priority = value.loadUnaligned(as: UInt32.self)
            case UInt16(RTA_OIF.rawValue) where value.count >= 4: route.outputLink = value.loadUnaligned(as: Int32.self)
            case UInt16(RTA_MULTIPATH.rawValue) where value.count >= MemoryLayout<rtnexthop>.size:
                // The first hop's link: rtnexthop is (length, flags, hops, ifindex).
                if route.outputLink == nil { route.outputLink = value.loadUnaligned(fromByteOffset: 4, as: Int32.self) }
            default: break
            }
        }
        return route
    }

    /// Calls `body` with each attribute's type (without the nested and byte-order bits) and value, from
    /// `start` in `buffer`; stops at the first attribute whose length is wrong.
    private static func forEachAttribute(
        in buffer: UnsafeRawBufferPointer, from start: Int, _ body: (UInt16, UnsafeRawBufferPointer) -> Void
    ) {
        let headerSize = MemoryLayout<rtattr>.size
        var offset = hnl_attribute_align(start)
        while buffer.count - offset >= headerSize {
            let length = Int(buffer.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            guard length >= headerSize, length <= buffer.count - offset else { return }
            let type =
                buffer.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)
                & ~(UInt16(NLA_F_NESTED) | UInt16(NLA_F_NET_BYTEORDER))
            body(type, UnsafeRawBufferPointer(rebasing: buffer[(offset + headerSize)..<(offset + length)]))
            offset += hnl_attribute_align(length)
        }
    }

    /// A NUL-terminated string attribute.
    private static func string(_ value: UnsafeRawBufferPointer) -> String {
        let bytes = value.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}
