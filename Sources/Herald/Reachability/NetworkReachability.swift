import Dispatch
import Foundation
import HeraldNotifications
import HeraldEngine

/// Watches whether the network — or one host — is reachable, and announces each change: Herald's
/// `AFNetworkReachabilityManager`, on Linux.
///
/// It reads the kernel's routing netlink (links, IPv4 and IPv6 addresses and routes) on Herald's event loop:
/// no thread of its own, no polling, no CPU while nothing changes. The network is reachable when a default
/// route goes through an interface that is up with a carrier and is not loopback; a host given as an IP
/// address (or `localhost`) is reachable when the kernel has a route for its address through an interface
/// that is up. Changes are debounced: a status must hold for ``debounceInterval`` before it is announced, so a
/// link that flaps within it is announced once, or not at all if it ends where it began.
///
/// ```swift
/// let reachability = NetworkReachability()
/// reachability.setReachabilityStatusChangeHandler { status in print(status.localizedDescription) }
/// try reachability.startMonitoring()
/// let token = NotificationHub.shared.addObserver(for: .reachabilityDidChange) { note in
///     print("now \(note.userInfo.status), was \(note.userInfo.previousStatus)")
/// }
/// ```
///
/// Each change runs the status-change handler, then posts
/// ``HeraldNotifications/NotificationName/reachabilityDidChange`` on ``notificationCenter``, both on a serial
/// queue of the monitor's own (never the loop thread, never the main queue), in the order of the changes.
public final class NetworkReachability: Sendable {
    /// A monitor of the network in general, posting on `NotificationHub.shared`: AFNetworking's
    /// `sharedManager`. Not started until ``startMonitoring()``.
    public static let shared = NetworkReachability()

    /// The host this monitor follows, or `nil` for the network in general.
    public let host: String?
    /// Where ``HeraldNotifications/NotificationName/reachabilityDidChange`` is posted.
    public let notificationCenter: NotificationHub
    /// How long, in seconds, a new status must hold before it is announced: the value given, at least 0 and at
    /// most an hour (``maximumDebounceInterval``).
    public let debounceInterval: TimeInterval

    /// The longest ``debounceInterval``: a longer one given is taken as this.
    public static let maximumDebounceInterval: TimeInterval = 3600

    private let target: ReachabilityTarget
    private let engine: Engine
    /// Runs the status-change handler and posts, in the order of the changes.
    private let eventQueue: DispatchQueue
    private let state = Locked(State())

    private struct State {
        var status = NetworkReachabilityStatus.unknown
        var monitor: RoutingMonitor?
        var handler: (@Sendable (NetworkReachabilityStatus) -> Void)?
    }

    /// Creates a monitor of the network in general: reachable when a default route goes through an interface
    /// that is up, has a carrier and is not loopback.
    /// - Parameters:
    ///   - notificationCenter: Where changes are posted; default `NotificationHub.shared`.
    ///   - debounceInterval: How long a new status must hold before it is announced; default 0.2 s.
    public convenience init(notificationCenter: NotificationHub = .shared, debounceInterval: TimeInterval = 0.2) {
        self.init(
            host: nil, target: .anyNetwork, notificationCenter: notificationCenter, debounceInterval: debounceInterval,
            engine: .shared)
    }

    /// Creates a monitor of one host, AFNetworking's `managerForDomain:` and `managerForAddress:`.
    ///
    /// An IPv4 or IPv6 address (brackets allowed) follows the route the kernel picks for that address, asked
    /// anew after every change (`RTM_GETROUTE`); `localhost` follows 127.0.0.1's. Any other name follows the
    /// network in general: finding its address would need the network itself, and a name server's answer is
    /// not a route.
    /// - Parameters:
    ///   - host: An IP address or a host name.
    ///   - notificationCenter: Where changes are posted; default `NotificationHub.shared`.
    ///   - debounceInterval: How long a new status must hold before it is announced; default 0.2 s.
    public convenience init(
        host: String, notificationCenter: NotificationHub = .shared, debounceInterval: TimeInterval = 0.2
    ) {
        self.init(
            host: host, target: ReachabilityTarget(host: host), notificationCenter: notificationCenter,
            debounceInterval: debounceInterval, engine: .shared)
    }

    init(
        host: String?, target: ReachabilityTarget, notificationCenter: NotificationHub, debounceInterval: TimeInterval,
        engine: Engine
    ) {
        self.host = host
        self.target = target
        self.notificationCenter = notificationCenter
        self.debounceInterval =
            debounceInterval.isNaN ? 0 : min(Self.maximumDebounceInterval, max(0, debounceInterval))
        self.engine = engine
        self.eventQueue = DispatchQueue(label: "herald.reachability")
    }

    deinit {
        if let monitor = state.withLock({ $0.monitor }) { engine.execute { monitor.stop() } }
    }

    /// The last status announced (or read when monitoring started); ``NetworkReachabilityStatus/unknown``
    /// before ``startMonitoring()`` and after ``stopMonitoring()``.
    public var status: NetworkReachabilityStatus { state.withLock { $0.status } }

    /// Whether ``status`` is reachable.
    public var isReachable: Bool { status.isReachable }

    /// Whether ``status`` is reachable through ethernet (AFNetworking's `isReachableViaWiFi` covers wired
    /// and wireless LANs; Herald tells them apart).
    public var isReachableViaEthernet: Bool { status.interface?.kind == .ethernet }

    /// Whether ``status`` is reachable through a wireless card: AFNetworking's `isReachableViaWiFi`.
    public var isReachableViaWireless: Bool { status.interface?.kind == .wireless }

    /// Whether ``status`` is reachable through a cellular modem: AFNetworking's `isReachableViaWWAN`.
    public var isReachableViaCellular: Bool { status.interface?.kind == .cellular }

    /// Whether the monitor is running.
    public var isMonitoring: Bool { state.withLock { $0.monitor != nil } }

    /// Sets the closure called with each new status, AFNetworking's `setReachabilityStatusChangeBlock:`.
    ///
    /// It runs on the monitor's own serial queue, before the change is posted, once per change in order;
    /// `nil` removes it.
    /// - Parameter handler: The closure, or `nil`.
    public func setReachabilityStatusChangeHandler(_ handler: (@Sendable (NetworkReachabilityStatus) -> Void)?) {
        state.withLock { $0.handler = handler }
    }

    /// Starts watching: reads the kernel's tables now (``status`` is known when this returns), announces that
    /// first status (from ``NetworkReachabilityStatus/unknown``), then each settled change. Does nothing when
    /// already monitoring.
    /// - Throws: ``HeraldError/Code/reachabilityUnavailable`` when the kernel refuses a routing netlink socket
    ///   (a sandbox without `AF_NETLINK`) or its tables can't be read.
    public func startMonitoring() throws {
        guard !isMonitoring else { return }
        let monitor = try RoutingMonitor(target: target, debounce: debounceInterval, engine: engine)
        let first = monitor.initialStatus
        let started = state.withLock { state -> Bool in
            guard state.monitor == nil else { return false }
            state.monitor = monitor
            return true
        }
        guard started else { return }
        announce(first, from: monitor)
        engine.execute { [weak self] in
            monitor.start { [weak self] status in self?.announce(status, from: monitor) }
            // Stopped meanwhile: `stopMonitoring` queued its stop before this start ran.
            if self?.state.withLock({ $0.monitor !== monitor }) ?? true { monitor.stop() }
        }
    }

    /// Stops watching; ``status`` becomes ``NetworkReachabilityStatus/unknown`` and nothing more is announced
    /// (a change already being announced still is). Does nothing when not monitoring.
    public func stopMonitoring() {
        let monitor = state.withLock { state -> RoutingMonitor? in
            defer {
                state.monitor = nil
                state.status = .unknown
            }
            return state.monitor
        }
        guard let monitor else { return }
        engine.execute { monitor.stop() }
    }

    /// Records `status` as `monitor`'s news, then runs the handler and posts, on the event queue.
    private func announce(_ status: NetworkReachabilityStatus, from monitor: RoutingMonitor) {
        let previous = state.withLock { state -> NetworkReachabilityStatus? in
            guard state.monitor === monitor, state.status != status else { return nil }
            defer { state.status = status }
            return state.status
        }
        guard let previous else { return }
        let change = ReachabilityChange(status: status, previousStatus: previous, host: host, date: Date())
        eventQueue.async { [self] in
            // The handler set when the change is told, not when it was seen: one set right after
            // `startMonitoring()` hears the first status, and one removed hears nothing more.
            state.withLock { $0.handler }?(status)
            notificationCenter.post(.reachabilityDidChange, object: self, userInfo: change)
        }
    }
}
