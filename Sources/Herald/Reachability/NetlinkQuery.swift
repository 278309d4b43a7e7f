import CNetlink
import Foundation
import HeraldNetlink

/// A routing-netlink socket for requests, answered at once: dumps of the kernel's links and routes, and
/// the route the kernel would pick for an address. Non-blocking: the kernel queues each part of an answer
/// before the call that asks for it returns (a dump's next part as the previous one is read), so reading
/// never waits. Used by one thread at a time.
final class NetlinkQuery {
    private let descriptor: Int32
    private let buffer: UnsafeMutableRawBufferPointer
    private var sequence: UInt32 = 0

    /// The largest datagram read at once: the kernel's dump parts are at most a few pages.
    static let bufferSize = 64 << 10

    /// Opens the socket.
    /// - Throws: ``HeraldError/Code/reachabilityUnavailable`` when the kernel refuses a netlink socket.
    init() throws {
        let descriptor = hnl_open(0, 1)
        guard descriptor >= 0 else { throw Self.error("open a routing netlink socket", code: -descriptor) }
        self.descriptor = descriptor
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 8)
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

    static func error(_ what: String, code: Int32) -> HeraldError {
        HeraldError(
            .reachabilityUnavailable, "Could not \(what): \(String(cString: strerror(code))) (errno \(code)).")
    }

    /// Reads the kernel's links and default routes into a new table.
    /// - Throws: ``HeraldError/Code/reachabilityUnavailable`` when the kernel's answer can't be read.
    func readTable(classify: @escaping @Sendable (NetlinkLink) -> NetworkInterfaceKind = NetworkTable.kind(of:))
        throws -> NetworkTable
    {
        var table = NetworkTable()
        table.classify = classify
        try dump(UInt16(RTM_GETLINK), into: &table)
        try dump(UInt16(RTM_GETROUTE), into: &table)
        return table
    }

    /// Replaces `table`'s routes with the kernel's; when the dump fails, `table` is left as it was (its routes
    /// are never emptied for a read that didn't happen).
    func readRoutes(into table: inout NetworkTable) throws {
        var fresh = table
        fresh.removeAllRoutes()
        try dump(UInt16(RTM_GETROUTE), into: &fresh)
        table = fresh
    }

    /// Dumps every object of `type` into `table`, again from the start when the tables changed meanwhile
    /// (the kernel marks such a dump interrupted), at most a few times.
    private func dump(_ type: UInt16, into table: inout NetworkTable) throws {
        for _ in 0..<4 {
            var copy = table
            if try dumpOnce(type, into: &copy) {
                table = copy
                return
            }
        }
        throw HeraldError(.reachabilityUnavailable, "The kernel's tables kept changing while they were read.")
    }

    /// Returns `false` when the dump was interrupted.
    private func dumpOnce(_ type: UInt16, into table: inout NetworkTable) throws -> Bool {
        sequence &+= 1
        let request = hnl_request_dump(descriptor, type, sequence)
        guard request == 0 else { throw Self.error("ask the kernel for its tables", code: -request) }
        // The kernel marks the message at which it noticed a change, which is seldom the end.
        var interrupted = false
        while true {
            let received = hnl_receive(descriptor, buffer.baseAddress!, buffer.count)
            guard received >= 0 else { throw Self.error("read the kernel's tables", code: Int32(-received)) }
            for message in NetlinkDecoder.messages(in: UnsafeRawBufferPointer(rebasing: buffer[..<received]))
            where message.sequence == sequence {
                interrupted = interrupted || message.isDumpInterrupted
                switch message.event {
                case .done(let endInterrupted): return !(interrupted || endInterrupted)
                case .error(let code) where code != 0: throw Self.error("read the kernel's tables", code: code)
                default: _ = table.apply(message.event)
                }
            }
        }
    }

    /// The route the kernel would pick for `address` (`AF_INET`/`AF_INET6` bytes); `nil` when it has none
    /// (it answers "network unreachable", "host unreachable" or "no route").
    /// - Throws: ``HeraldError/Code/reachabilityUnavailable`` when the question can't be asked.
    func route(family: Int32, address: [UInt8]) throws -> NetlinkRoute? {
        sequence &+= 1
        let request = address.withUnsafeBytes { hnl_request_route(descriptor, family, $0.baseAddress!, sequence) }
        guard request == 0 else { throw Self.error("ask the kernel for a route", code: -request) }
        while true {
            let received = hnl_receive(descriptor, buffer.baseAddress!, buffer.count)
            guard received >= 0 else { throw Self.error("read the kernel's route", code: Int32(-received)) }
            for message in NetlinkDecoder.messages(in: UnsafeRawBufferPointer(rebasing: buffer[..<received]))
            where message.sequence == sequence {
                switch message.event {
                case .route(let route, _): return route
                case .error(let code) where code != 0:
                    // No route, a rule that forbids one, or no such family (IPv6 disabled at boot).
                    if [ENETUNREACH, EHOSTUNREACH, ESRCH, EACCES, EINVAL, EOPNOTSUPP, EAFNOSUPPORT].contains(code) {
                        return nil
                    }
                    throw Self.error("read the kernel's route", code: code)
                default: break
                }
            }
        }
    }

    /// `target`'s status in `table` (whose links name the route's interface).
    func status(of target: ReachabilityTarget, in table: NetworkTable) throws -> NetworkReachabilityStatus {
        switch target {
        case .anyNetwork:
            return table.status
        case .address(let family, let bytes):
            return table.status(forRoute: try route(family: family, address: bytes))
        }
    }
}
