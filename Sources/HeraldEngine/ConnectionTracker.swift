import CCurl
import Foundation

/// A change of state of one of a connection pool's connections, as the engine reports it: a connection became
/// active (its first transfer, or a transfer after a rest), idle (its last transfer left it), or closed.
package struct ConnectionChange: Sendable {
    /// Where a connection is in its life. A connection being opened has no state yet: it has one from the
    /// moment its first transfer has it, established.
    package enum State: Sendable, Equatable {
        /// At least one transfer uses it (several, as HTTP/2 streams).
        case active
        /// Open, kept for the next transfer to its origin, used by none.
        case idle
        /// Closed: by the server, by curl (its limits, a failure) or with the pool.
        case closed
    }

    /// The connection's number in its pool, from 1; never given to another connection of the pool.
    package let connection: Int
    /// The state it has now.
    package let state: State
    /// The state before; `nil` for a connection just established (its first `active`).
    package let previousState: State?
    /// The scheme, host and port of the URL of the connection's first transfer.
    package let scheme: String
    package let host: String
    package let port: Int
    /// The IP address and port the socket connected to (a proxy's, through a proxy); `nil` for a socket that
    /// is not IPv4 or IPv6.
    package let peerAddress: String?
    package let peerPort: Int?
    /// The status line's version of the last response on it (`HTTP/1.1`, `HTTP/2`), once one arrived.
    package let responseVersion: String?
    /// Seconds since the socket was opened: for `closed`, how long the connection lived.
    package let age: TimeInterval
    /// How many of the pool's connections to the same origin and peer address are active and idle, after
    /// this change.
    package let activeCount: Int
    package let idleCount: Int
}

/// Which of a connection pool's connections are open, and which transfers use each: what
/// `ConnectionChange` reports. Loop thread only.
///
/// libcurl 7.88 names no connection to its user, so the engine follows them through three callbacks: curl
/// opens every socket of the pool through ``openSocket`` and closes it through ``closeSocket``
/// (`CURLOPT_OPENSOCKETFUNCTION`, `CURLOPT_CLOSESOCKETFUNCTION`), and ``prerequest`` runs when a transfer has
/// its connection, established or reused, just before its request is sent (`CURLOPT_PREREQFUNCTION`). That
/// call names the connection only by its addresses, so each socket's local port is read (`getsockname`) the
/// first time a transfer may be on it, and a connection is found by its local port and its peer.
///
/// A socket no transfer ever used (a connection attempt that failed, the loser of a race between IPv6 and
/// IPv4) is never reported. With libcurl older than 7.80, which has no such call, a transfer is tied to its
/// connection at its first response head instead (``attachAtFirstResponse(_:)``): its connection counts as
/// idle while the request is sent.
final class ConnectionTracker {
    /// The connection's first transfer's scheme, host and port.
    private struct Origin: Hashable {
        let scheme: String
        let host: String
        let port: Int
    }

    /// The connections counted together: one origin through one peer address.
    private struct Group: Hashable {
        let origin: Origin
        let peerAddress: String?
    }

    /// How many of a group's connections are in each state; shared by the group's connections, so that a
    /// change of state updates it without looking the group up.
    private final class Counts {
        @exclusivity(unchecked) var active = 0
        @exclusivity(unchecked) var idle = 0
    }

    /// How a transfer's connection is named by curl: its local port and its peer.
    struct Endpoints: Hashable {
        let localPort: Int
        let peerPort: Int
        let peerAddress: String
    }

    /// One open socket, and once a transfer took it, one connection. A class: a change of state updates it
    /// where it is, with no copy.
    private final class Connection {
        let number: Int
        /// When the socket was opened, on ``QueueClock``.
        let openedAt: UInt64
        let peerAddress: String?
        let peerPort: Int?
        /// The local port, once read.
        @exclusivity(unchecked) var localPort: Int?
        /// Set by its first transfer: a connection without one was never established.
        @exclusivity(unchecked) var origin: Origin?
        /// Its group's counts, from its first transfer on.
        @exclusivity(unchecked) var counts: Counts?
        /// The transfers on it now.
        @exclusivity(unchecked) var transfers: [Transfer] = []
        /// The status line's version of the last response on it (`HTTP/1.1`, `HTTP/2`), once one arrived.
        @exclusivity(unchecked) var responseVersion: String?

        init(number: Int, openedAt: UInt64, peerAddress: String?, peerPort: Int?) {
            self.number = number
            self.openedAt = openedAt
            self.peerAddress = peerAddress
            self.peerPort = peerPort
        }

        /// Whether curl still has its socket open.
        @exclusivity(unchecked) var isOpen = true

        var state: ConnectionChange.State? {
            guard counts != nil else { return nil }
            return transfers.isEmpty ? .idle : .active
        }
    }

    @exclusivity(unchecked) private var connections: [curl_socket_t: Connection] = [:]
    @exclusivity(unchecked) private var sockets: [Endpoints: curl_socket_t] = [:]
    /// Each group's counts, while it has a connection.
    @exclusivity(unchecked) private var groups: [Group: Counts] = [:]
    @exclusivity(unchecked) private var lastNumber = 0
    /// The connection the last transfer took, by its endpoints and socket.
    @exclusivity(unchecked) private var lastAttached:
        (endpoints: Endpoints, socket: curl_socket_t, connection: Connection)?
    /// Hears every change; runs on the loop thread, so it only hands the change on.
    @exclusivity(unchecked) var onChange: (@Sendable (ConnectionChange) -> Void)?
    /// Whether anyone hears the changes now: when not, none is made.
    @exclusivity(unchecked) var isObserved: (@Sendable () -> Bool)?

    // MARK: - the transfers' handles

    /// Has curl open and close the sockets of `easy` through the tracker at `context` (the pool's,
    /// ``EasyHandlePool/connections``), and report the connection each transfer takes to the transfer at
    /// `transfer`. Set once per configured handle: a pooled handle keeps them, and each later transfer only
    /// points the report at itself (``setPrerequest(on:transfer:)``).
    static func setCallbacks(
        on easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer, transfer: UnsafeMutableRawPointer
    ) -> CURLcode {
        let code = herald_easy_setopt_socket_functions(easy, openSocket, closeSocket, context)
        return code != CURLE_OK ? code : herald_easy_setopt_prereq(easy, prerequest, transfer)
    }

    /// Points the pre-request callback ``setCallbacks(on:context:transfer:)`` set at the transfer at
    /// `transfer`, whose ``Transfer/connections`` is the tracker of the pool it joined. Every transfer, beside
    /// its other callbacks' data.
    static func setPrerequest(on easy: UnsafeMutableRawPointer, transfer: UnsafeMutableRawPointer) -> CURLcode {
        herald_easy_setopt_prereq_data(easy, transfer)
    }

    private static let openSocket: herald_curl_opensocket_cb = { context, purpose, address in
        guard let address else { return CURL_SOCKET_BAD }
        let socket = herald_open_socket(address)
        guard socket >= 0, herald_socket_is_connection(purpose), let context else { return socket }
        var port: Int32 = 0
        let peerAddress = withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { text in
            guard let start = text.baseAddress, herald_socket_peer_text(address, start, text.count, &port) else {
                return nil as String?
            }
            return String(cString: start)
        }
        Unmanaged<ConnectionTracker>.fromOpaque(context).takeUnretainedValue().opened(
            socket, peerAddress: peerAddress, peerPort: peerAddress == nil ? nil : Int(port))
        return socket
    }

    private static let closeSocket: herald_curl_closesocket_cb = { context, socket in
        if let context { Unmanaged<ConnectionTracker>.fromOpaque(context).takeUnretainedValue().closed(socket) }
        return herald_close_socket(socket)
    }

    private static let prerequest: herald_curl_prereq_cb = { context, primaryIP, _, primaryPort, localPort in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        // libcurl sends a request again by itself, on a fresh connection, when a kept-alive HTTP/1.1 one it went
        // out on ended before any answer: the server may have closed it just as the request came (then it never
        // saw it), or after reading it whole (then it may have acted on it). Only a request that may be made
        // twice goes out again: an idempotent one, or one whose HTTP/2 stream libcurl's text showed refused. Any
        // other stops here (CURL_PREREQFUNC_ABORT) with an error that says it was not sent again. Over HTTP/2,
        // where libcurl resends a stream the server refused unprocessed (REFUSED_STREAM, a GOAWAY) and a server
        // that goes away says so, its resends go ahead.
        if transfer.sendsWithoutAnswer > 0, transfer.lastSendWentOverHTTP1, !transfer.mayBeSentAgainUnanswered {
            transfer.unansweredRequestWasNotResent = true
            return 1
        }
        transfer.sendsWithoutAnswer += 1
        // The idle timeout counts from here: the wait for a connection before it was no silence of the server's.
        if !transfer.hasConnection {
            transfer.hasConnection = true
            transfer.lastActivity = ActivityClock.now
        }
        guard let primaryIP else {
            transfer.lastSendWentOverHTTP1 = transfer.speaksHTTP1Only
            return 0
        }
        transfer.connections?.attach(
            transfer, localPort: Int(localPort), peerPort: Int(primaryPort), peerAddress: primaryIP)
        let version = transfer.connections?.lastResponseVersion(of: transfer)
        transfer.lastSendWentOverHTTP1 = transfer.speaksHTTP1Only || version?.hasPrefix("HTTP/1") == true
        // CURL_PREREQFUNC_OK: the request goes ahead.
        return 0
    }

    /// The version of the last response on `transfer`'s connection (`HTTP/1.1`, `HTTP/2`), if one arrived on it.
    func lastResponseVersion(of transfer: Transfer) -> String? {
        guard let socket = transfer.connectionSocket else { return nil }
        return connections[socket]?.responseVersion
    }

    /// A GOAWAY naming `last` the last stream processed arrived on `transfer`'s connection: every other transfer
    /// on it hears of it, as libcurl tells only the one that read the frame. Loop thread, in a curl callback.
    func goawayArrived(for transfer: Transfer, lastStream last: UInt32) {
        guard let socket = transfer.connectionSocket, let connection = connections[socket] else { return }
        for other in connection.transfers where other !== transfer {
            other.goawayWatch.goawayArrived(lastStream: last)
        }
    }

    // MARK: - events

    private func opened(_ socket: curl_socket_t, peerAddress: String?, peerPort: Int?) {
        // A number still on record belonged to a socket curl closed without the close callback (none of its
        // paths should): that connection is gone, and is reported so.
        if connections[socket] != nil { closed(socket) }
        lastNumber += 1
        connections[socket] = Connection(
            number: lastNumber, openedAt: QueueClock.now, peerAddress: peerAddress, peerPort: peerPort)
    }

    private func closed(_ socket: curl_socket_t) {
        guard let connection = connections.removeValue(forKey: socket) else { return }
        connection.isOpen = false
        if lastAttached?.socket == socket { lastAttached = nil }
        if let localPort = connection.localPort, let peerPort = connection.peerPort,
            let peerAddress = connection.peerAddress
        {
            sockets[Endpoints(localPort: localPort, peerPort: peerPort, peerAddress: peerAddress)] = nil
        }
        for transfer in connection.transfers { transfer.connectionSocket = nil }
        guard let state = connection.state else { return }
        if connection.responseVersion == nil {
            connection.responseVersion = connection.transfers.first { $0.responseStatus > 0 }?.responseVersion
        }
        count(connection, leaving: state, entering: nil)
        report(connection, .closed, previous: state)
        connection.transfers = []
    }

    /// `transfer` has its connection: the one at `endpoints`. Called from curl's callback, loop thread.
    private func attach(
        _ transfer: Transfer, localPort: Int, peerPort: Int, peerAddress: UnsafePointer<CChar>
    ) {
        let socket: curl_socket_t
        let connection: Connection
        // Mostly the connection the last transfer took (one at a time, one kept connection): compared in
        // place, with no string made and nothing hashed.
        if let last = lastAttached, last.connection.isOpen, last.endpoints.localPort == localPort,
            last.endpoints.peerPort == peerPort,
            last.endpoints.peerAddress.withCString({ strcmp($0, peerAddress) == 0 })
        {
            socket = last.socket
            connection = last.connection
        } else {
            let endpoints = Endpoints(
                localPort: localPort, peerPort: peerPort, peerAddress: String(cString: peerAddress))
            guard let found = self.socket(at: endpoints), let open = connections[found] else { return }
            lastAttached = (endpoints, found, open)
            socket = found
            connection = open
        }
        guard transfer.connectionSocket != socket else { return }
        detach(transfer)
        transfer.connectionSocket = socket
        transfer.connectionNumber = connection.number
        let previous = connection.state
        if connection.counts == nil {
            let url = transfer.request.url
            let scheme = url.scheme?.lowercased() ?? ""
            let origin = Origin(scheme: scheme, host: url.host ?? "", port: url.port ?? (scheme == "https" ? 443 : 80))
            let group = Group(origin: origin, peerAddress: connection.peerAddress)
            connection.origin = origin
            if let counts = groups[group] {
                connection.counts = counts
            } else {
                let counts = Counts()
                groups[group] = counts
                connection.counts = counts
            }
        }
        connection.transfers.append(transfer)
        guard previous != .active else { return }
        count(connection, leaving: previous, entering: .active)
        report(connection, .active, previous: previous)
    }

    /// With libcurl older than 7.80: ties `transfer` to its connection when its first response line arrives,
    /// from curl's record of the connection's addresses. Loop thread, in the header callback.
    func attachAtFirstResponse(_ transfer: Transfer) {
        guard let easy = transfer.easyHandle else { return }
        var localPort = 0
        var peerPort = 0
        var peer: UnsafeMutablePointer<CChar>?
        guard herald_easy_getinfo_long(easy, CURLINFO_LOCAL_PORT, &localPort) == CURLE_OK,
            herald_easy_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &peerPort) == CURLE_OK,
            herald_easy_getinfo_string(easy, CURLINFO_PRIMARY_IP, &peer) == CURLE_OK, let peer
        else { return }
        attach(transfer, localPort: localPort, peerPort: peerPort, peerAddress: peer)
    }

    /// `transfer` left the pool (finished, cancelled, or about to start again): it no longer uses its
    /// connection. Loop thread, after `curl_multi_remove_handle`.
    func detach(_ transfer: Transfer) {
        guard let socket = transfer.connectionSocket else { return }
        transfer.connectionSocket = nil
        guard let connection = connections[socket],
            let index = connection.transfers.firstIndex(where: { $0 === transfer })
        else { return }
        connection.transfers.remove(at: index)
        if transfer.responseStatus > 0 { connection.responseVersion = transfer.responseVersion }
        guard connection.transfers.isEmpty else { return }
        count(connection, leaving: .active, entering: .idle)
        report(connection, .idle, previous: .active)
    }

    /// Reports every connection still open as closed: after `curl_multi_cleanup`, which closes them all
    /// through ``closeSocket``, this finds none unless curl left one.
    func closeAll() {
        for socket in Array(connections.keys) { closed(socket) }
    }

    // MARK: - bookkeeping

    /// The socket of the connection at `endpoints`, reading the local port of each socket that has none yet.
    private func socket(at endpoints: Endpoints) -> curl_socket_t? {
        if let socket = sockets[endpoints] { return socket }
        for (socket, connection) in connections where connection.localPort == nil {
            let port = herald_socket_local_port(socket)
            guard port > 0 else { continue }
            connection.localPort = Int(port)
            if let peerPort = connection.peerPort, let peerAddress = connection.peerAddress {
                sockets[Endpoints(localPort: Int(port), peerPort: peerPort, peerAddress: peerAddress)] = socket
            }
        }
        return sockets[endpoints]
    }

    private func count(
        _ connection: Connection, leaving old: ConnectionChange.State?, entering new: ConnectionChange.State?
    ) {
        guard let counts = connection.counts else { return }
        switch old {
        case .active: counts.active -= 1
        case .idle: counts.idle -= 1
        case .closed, nil: break
        }
        switch new {
        case .active: counts.active += 1
        case .idle: counts.idle += 1
        case .closed, nil: break
        }
        if counts.active == 0, counts.idle == 0, let origin = connection.origin {
            groups[Group(origin: origin, peerAddress: connection.peerAddress)] = nil
        }
    }

    private func report(_ connection: Connection, _ state: ConnectionChange.State, previous: ConnectionChange.State?) {
        guard let onChange, isObserved?() ?? true, let origin = connection.origin, let counts = connection.counts
        else { return }
        let now = QueueClock.now
        onChange(
            ConnectionChange(
                connection: connection.number, state: state, previousState: previous, scheme: origin.scheme,
                host: origin.host, port: origin.port, peerAddress: connection.peerAddress,
                peerPort: connection.peerPort,
                responseVersion: connection.responseVersion,
                age: now >= connection.openedAt ? TimeInterval(now - connection.openedAt) / 1e9 : 0,
                activeCount: counts.active, idleCount: counts.idle))
    }
}
