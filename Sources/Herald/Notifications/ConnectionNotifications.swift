import Foundation
import HeraldEngine
import HeraldNotifications

/// Where one of a session's connections is in its life, as its pool sees it.
public enum ConnectionState: String, Sendable, Hashable, CaseIterable {
    /// At least one task's request is on it (several at once over HTTP/2, as streams).
    case active
    /// Open and kept for a later request to its origin; no request is on it.
    case idle
    /// Closed: by the pool (its limits, its maximum age, a failure on it, a server's close found when the
    /// connection is next wanted) or with the session. An idle connection the server closes is not watched:
    /// libcurl finds it closed, and Herald announces it, when the next request to its origin looks for a
    /// connection, or when the session is invalidated.
    case closed
}

/// The payload of ``HeraldNotifications/NotificationName/connectionDidChangeState``: one of a session's
/// connections became active, idle or closed, and how many of the session's connections to the same origin
/// and peer address are active and idle now.
///
/// A connection is announced from the moment it is established and carries its first request (`active`,
/// with no previous state); then `idle` when its last request is done, `active` again when a request reuses
/// it, and `closed` once. A connection attempt that never carried a request (it failed, or lost the race
/// between an IPv6 and an IPv4 address) is not announced.
public struct ConnectionStateChange: Sendable {
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// The connection's number, from 1, unique within its session.
    public let connectionIdentifier: Int
    /// The state now.
    public let state: ConnectionState
    /// The state before; `nil` for a connection just established.
    public let previousState: ConnectionState?
    /// The scheme of the URL of the connection's first request: `http` or `https`.
    public let scheme: String
    /// The host of the URL of the connection's first request, as written there.
    public let host: String
    /// The port of that URL, or its scheme's default.
    public let port: Int
    /// The IP address the connection went to (a proxy's, through a proxy), as text; `nil` when it is not
    /// an IPv4 or IPv6 address.
    public let peerAddress: String?
    /// The port the connection went to.
    public let peerPort: Int?
    /// The HTTP version of the responses received on it, as OpenTelemetry writes it (`1.0`, `1.1`, `2`);
    /// `nil` until a response arrived.
    public let protocolVersion: String?
    /// Seconds since the connection's socket was opened; for ``ConnectionState/closed``, how long the
    /// connection lived.
    public let age: TimeInterval
    /// How many of the session's connections to this origin, through this peer address, are active after
    /// this change.
    public let activeConnections: Int
    /// How many of them are idle after this change.
    public let idleConnections: Int
    /// When the change happened.
    public let date: Date

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - connectionIdentifier: The connection's number in its session.
    ///   - state: The state now.
    ///   - previousState: The state before, `nil` for a connection just established.
    ///   - scheme: The scheme of the connection's first request.
    ///   - host: Its host.
    ///   - port: Its port, or the scheme's default.
    ///   - peerAddress: The IP address connected to.
    ///   - peerPort: The port connected to.
    ///   - protocolVersion: The HTTP version of its responses, once known.
    ///   - age: Seconds since the socket was opened.
    ///   - activeConnections: The session's active connections to the origin and peer address, after the change.
    ///   - idleConnections: Its idle ones.
    ///   - date: When the change happened.
    public init(
        sessionIdentifier: Int, connectionIdentifier: Int, state: ConnectionState, previousState: ConnectionState?,
        scheme: String, host: String, port: Int, peerAddress: String?, peerPort: Int?, protocolVersion: String?,
        age: TimeInterval, activeConnections: Int, idleConnections: Int, date: Date
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.connectionIdentifier = connectionIdentifier
        self.state = state
        self.previousState = previousState
        self.scheme = scheme
        self.host = host
        self.port = port
        self.peerAddress = peerAddress
        self.peerPort = peerPort
        self.protocolVersion = protocolVersion
        self.age = age
        self.activeConnections = activeConnections
        self.idleConnections = idleConnections
        self.date = date
    }

    init(_ change: ConnectionChange, sessionIdentifier: Int, date: Date) {
        self.init(
            sessionIdentifier: sessionIdentifier, connectionIdentifier: change.connection,
            state: ConnectionState(change.state), previousState: change.previousState.map(ConnectionState.init),
            scheme: change.scheme, host: change.host, port: change.port, peerAddress: change.peerAddress,
            peerPort: change.peerPort,
            protocolVersion: change.responseVersion.map { HTTPResponse.protocolVersionAttribute($0) ?? $0 },
            age: change.age,
            activeConnections: change.activeCount, idleConnections: change.idleCount, date: date)
    }
}

extension ConnectionState {
    init(_ state: ConnectionChange.State) {
        switch state {
        case .active: self = .active
        case .idle: self = .idle
        case .closed: self = .closed
        }
    }
}

extension NotificationName where UserInfo == ConnectionStateChange {
    /// One of a session's connections was established, became active or idle, or closed
    /// (`herald.connection.state`). Object: the session (`nil` once the session was released, for the
    /// connections its pool closes then).
    ///
    /// Posted from the session's event queue, in the order of the changes, and before the session's
    /// `sessionDidInvalidate`: the connections its invalidation closes are announced first. What
    /// `MetricsObserver` turns into `http.client.open_connections` and `http.client.connection.duration`.
    public static let connectionDidChangeState = NotificationName<ConnectionStateChange>("herald.connection.state")
}

/// A session's connection changes waiting to be posted: the engine's loop thread adds them, the event queue
/// posts them, together.
struct PendingConnectionChanges {
    var changes: [(change: ConnectionStateChange, subject: SessionManager?)] = []
    /// Whether a post of the waiting changes is scheduled on the event queue.
    var isPostScheduled = false
}

extension SessionEventPoster {
    /// How long the first of a run of connection changes waits for others before they are posted together: a
    /// kept connection turns active and idle again with every request, and one hand-off to the event queue
    /// per change cost a request with observers a fifth more CPU at 64 in flight.
    static let connectionChangeDelay = DispatchTimeInterval.milliseconds(1)

    /// Whether anyone observes `connectionDidChangeState` on the session's center: one atomic load when nobody does.
    var connectionChangesObserved: @Sendable () -> Bool {
        let center = center
        return { center.hasObservers(for: .connectionDidChangeState) }
    }

    /// What the session's pool calls, on the engine's loop thread, at each change of a connection's state while
    /// someone observes `connectionDidChangeState` (``connectionChangesObserved``): it adds the change to those
    /// waiting, and the first of them schedules their post on the event queue (``postConnectionChanges()``),
    /// about a millisecond later.
    func connectionChanges(of session: SessionManager) -> @Sendable (ConnectionChange) -> Void {
        let sessionIdentifier = sessionIdentifier
        return { [weak session, self] change in
            let payload = ConnectionStateChange(change, sessionIdentifier: sessionIdentifier, date: Date())
            let subject = session
            let schedules = pendingConnectionChanges.withLock { pending -> Bool in
                pending.changes.append((payload, subject))
                guard !pending.isPostScheduled else { return false }
                pending.isPostScheduled = true
                return true
            }
            guard schedules else { return }
            // Through the one list of the event queue's work when the delay ends, so that the post comes after
            // all work handed over before it (a completion run may be holding some).
            eventQueue.asyncAfter(deadline: .now() + Self.connectionChangeDelay) {
                self.async { self.postConnectionChanges() }
            }
        }
    }

    /// Posts every connection change waiting, in the order they happened. Event queue; the session's
    /// invalidation calls it before posting `sessionDidInvalidate`, so that no change comes after it.
    func postConnectionChanges() {
        let waiting = pendingConnectionChanges.withLock { pending in
            pending.isPostScheduled = false
            defer { pending.changes = [] }
            return pending.changes
        }
        for (change, subject) in waiting {
            center.post(.connectionDidChangeState, object: subject, userInfo: change)
        }
    }
}
