import Foundation
import Herald
import HeraldNotifications
import Metrics

/// Records HTTP client metrics on swift-metrics under OpenTelemetry's names, attributes and units.
///
/// ``instruments`` lists every instrument it exports — name, kind, unit, attributes and advised bucket
/// boundaries — and the article "Observing Herald in production" shows them in a table:
///
/// - `http.client.request.duration` (histogram, `s`): a timer per completed task, about as long as its span: from
///   its first resume to the end of its transfer for a task of one transfer (an interceptor's adapter and the
///   wait to start included); from its first resume to its completion for a task that ran
///   several (retried, redirected, answering an authentication challenge, after a wait for connectivity: the
///   delays and waits included, as the user waited them) or that never reached the network.
/// - `http.client.request.time_in_queue` (histogram, `s`): how long a task's last transfer waited for a
///   connection (`TransferMetrics.timeInQueue`), when measured.
/// - `http.client.active_requests` (up-down counter, `{request}`): a meter of the tasks running now (resumed,
///   not suspended or complete, not waiting out a retry's delay, from `taskWillRetry` with a delay until the
///   delay has passed, and not waiting for a network, from `taskIsWaitingForConnectivity` to its end).
/// - `http.client.open_connections` (up-down counter, `{connection}`): a meter per `http.connection.state`
///   (`active` or `idle`) of the sessions' open connections, from `connectionDidChangeState`. When the
///   observer is released (as when the token that holds it is cancelled or released and nothing else keeps
///   it) with requests running or connections open, it takes back what it counted in these two meters; so it
///   does when the token is cancelled while the observer lives on (``observationDidEnd(_:)``).
/// - `http.client.connection.duration` (histogram, `s`): a timer per closed connection, of how long it was
///   open.
/// - `http.client.request.body.size` and `http.client.response.body.size` (histograms, `By`): recorders of
///   body bytes; the request's once it was sent, the response's only when a response arrived.
/// - `herald.download.move_failures`, `herald.client.request.retries`,
///   `herald.client.request.connectivity_waits` and `herald.network.reachability.changes`: counters.
/// - `herald.network.reachable` (gauge, `1`): 1 while the last reachability status announced was reachable,
///   0 while not; no value at all until a status is announced (before reachability is watched). Both it and
///   `herald.network.reachability.changes` follow the network in general: a monitor of one host's changes are
///   not counted.
///
/// swift-metrics' API has no unit, description or bucket layout. The units reach a backend two ways: the
/// metric names the units as OpenTelemetry does (a timer is seconds by its preferred display unit), and with
/// ``Configuration/describesInstruments`` each metric carries `unit` and `description` dimensions, which
/// swift-otel takes as the OTLP instrument's unit and description rather than as attributes. Give your
/// backend the bucket boundaries of ``advisedBuckets``, one layout per histogram.
///
/// The duration and body-size metrics carry OpenTelemetry's attributes for HTTP client requests:
///
/// | dimension | value | present |
/// |---|---|---|
/// | `http.request.method` | a method of ``Configuration/knownMethods``, anything else `_OTHER` | always |
/// | `server.address` | the URL's host | always (see ``Configuration/includesServerAddress``) |
/// | `server.port` | the port, or the scheme's default | always (with `server.address`) |
/// | `url.scheme` | `http` or `https` | always |
/// | `http.response.status_code` | `100`…`599`, anything else `_OTHER` | when a response arrived |
/// | `network.protocol.version` | `1.0`, `1.1`, `2` or `3` | when a response arrived |
/// | `error.type` | the status code for 400 or more, else `HeraldError.Code`'s description | on failure (not for a response below 400 the task's serializer or validation refused: the HTTP request succeeded) |
/// | `herald.response.source` | `network`, `cache` or `revalidated` (`ResponseSource`) | duration only, always |
///
/// swift-metrics' dimensions are strings: `http.response.status_code` and `server.port`, integers in the
/// conventions (and on ``TracingObserver``'s spans), are their decimal text here.
///
/// Every value is bounded, none is taken from the URL's path or query: hosts past
/// ``Configuration/maximumServerAddresses`` are recorded as `_OTHER` (address and port), and once
/// ``Configuration/maximumDimensionSets`` sets exist, further combinations are recorded with every present
/// value `_OTHER`. Metric objects are created once per dimension set and cached.
///
/// It takes the `MetricsFactory` to use and never bootstraps `MetricsSystem`.
public final class MetricsObserver: SessionObserver {
    /// Options.
    public struct Configuration: Sendable {
        /// Adds the `server.address` and `server.port` dimensions, which OpenTelemetry requires. On by default;
        /// their values are bounded by ``maximumServerAddresses``.
        public var includesServerAddress = true
        /// The most distinct hosts (with their ports) named in `server.address`; later ones are recorded as
        /// `_OTHER`. Default 32: a service calls a handful of others, a crawler calls any number.
        public var maximumServerAddresses = 32
        /// The most dimension sets created per metric before combinations are folded into `_OTHER`. Default 256.
        public var maximumDimensionSets = 256
        /// The methods recorded as themselves in `http.request.method`; any other is `_OTHER`. Default
        /// ``HTTPSemanticConventions/knownMethods``; add the methods your services define, such as `QUERY`.
        public var knownMethods: Set<String> = HTTPSemanticConventions.knownMethods
        /// Adds a `unit` and a `description` dimension to every metric (``Instrument/unit`` and
        /// ``Instrument/summary``), which swift-otel reads as the OTLP instrument's unit and description, not
        /// as attributes. Off by default: other backends would make them labels of every series (drop them
        /// there: for swift-prometheus, ``MetricsObserver/prometheusNameAndLabels(_:_:)`` does).
        public var describesInstruments = false

        /// The default configuration.
        public init() {}
    }

    /// The metric names, as OpenTelemetry's semantic conventions spell them.
    public enum Name {
        /// Request duration timer.
        public static let requestDuration = "http.client.request.duration"
        /// Running requests meter.
        public static let activeRequests = "http.client.active_requests"
        /// Request body size recorder.
        public static let requestBodySize = "http.client.request.body.size"
        /// Response body size recorder.
        public static let responseBodySize = "http.client.response.body.size"
        /// Failed download moves counter.
        public static let downloadMoveFailures = "herald.download.move_failures"
        /// Retries counter (one per `taskWillRetry`).
        public static let retries = "herald.client.request.retries"
        /// Connectivity waits counter (one per `taskIsWaitingForConnectivity`).
        public static let connectivityWaits = "herald.client.request.connectivity_waits"
        /// Reachability meter: 1 reachable, 0 not (from `reachabilityDidChange`).
        public static let networkReachable = "herald.network.reachable"
        /// Reachability changes counter (one per `reachabilityDidChange`).
        public static let reachabilityChanges = "herald.network.reachability.changes"
        /// Time waiting for a connection histogram (a timer).
        public static let timeInQueue = "http.client.request.time_in_queue"
        /// Open connections meter, by state (`active`, `idle`).
        public static let openConnections = "http.client.open_connections"
        /// Connection lifetime histogram (a timer).
        public static let connectionDuration = "http.client.connection.duration"
    }

    /// An instrument the observer exports, as OpenTelemetry describes it.
    public struct Instrument: Sendable, Hashable {
        /// OpenTelemetry's instrument kinds, each with the swift-metrics type that records it.
        public enum Kind: String, Sendable, Hashable {
            /// A histogram: a swift-metrics `Timer` (durations) or aggregating `Recorder` (sizes).
            case histogram
            /// An up-down counter: a swift-metrics `Meter`, incremented and decremented. (swift-otel 1.6
            /// exports a meter as an OTLP gauge, its current value.)
            case upDownCounter
            /// A monotonic counter: a swift-metrics `Counter`.
            case counter
            /// A gauge: a swift-metrics `Meter` that is set.
            case gauge
        }

        /// The metric's name, such as `http.client.request.duration`.
        public let name: String
        /// The kind of instrument.
        public let kind: Kind
        /// The unit in UCUM, as the conventions write it: `s`, `By`, `{request}`, `1`.
        public let unit: String
        /// What it measures, one sentence.
        public let summary: String
        /// The dimension names it may carry, in the order they are given.
        public let attributes: [String]
        /// The advised histogram bucket boundaries, in ``unit``; `nil` for an instrument that is no histogram.
        public let buckets: [Double]?
    }

    /// OpenTelemetry's advised histogram bucket boundaries for `http.client.request.duration`, in seconds:
    /// 5 ms to 10 s, dense below one second where HTTP latencies mostly fall. The same layout serves
    /// `http.client.request.time_in_queue`, as the conventions advise.
    public static let advisedDurationBuckets: [Double] = [
        0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ]

    /// Bucket boundaries for the body-size histograms, in bytes: 0, then powers of four from 64 B to 1 GiB.
    /// The conventions advise none; these separate an empty body, small API answers, pages and images, and
    /// downloads up to a gigabyte, in 14 buckets.
    public static let advisedBodySizeBuckets: [Double] = [
        0, 64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864,
        268_435_456, 1_073_741_824,
    ]

    /// OpenTelemetry's advised histogram bucket boundaries for `http.client.connection.duration`, in seconds:
    /// 10 ms to 5 minutes, for connections closed at once and connections kept for minutes.
    public static let advisedConnectionDurationBuckets: [Double] = [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
    ]

    /// The attribute of `http.client.request.duration` that tells where the response came from: one of
    /// `ResponseSource`'s three raw values, so it multiplies the dimension sets by three at most.
    public static let responseSourceAttribute = "herald.response.source"

    /// Every instrument the observer exports.
    public static let instruments: [Instrument] = {
        let target = ["http.request.method", "server.address", "server.port", "url.scheme"]
        let outcome = target + ["http.response.status_code", "network.protocol.version", "error.type"]
        return [
            Instrument(
                name: Name.requestDuration, kind: .histogram, unit: "s",
                summary: "Duration of HTTP client requests.", attributes: outcome + [responseSourceAttribute],
                buckets: advisedDurationBuckets),
            Instrument(
                name: Name.timeInQueue, kind: .histogram, unit: "s",
                summary: "The amount of time requests spent on a queue waiting for an available connection.",
                attributes: target + ["network.protocol.version"], buckets: advisedDurationBuckets),
            Instrument(
                name: Name.activeRequests, kind: .upDownCounter, unit: "{request}",
                summary: "Number of active HTTP requests.", attributes: target, buckets: nil),
            Instrument(
                name: Name.openConnections, kind: .upDownCounter, unit: "{connection}",
                summary: "Number of outbound HTTP connections that are currently active or idle on the client.",
                attributes: ["http.connection.state", "server.address", "server.port", "network.peer.address"],
                buckets: nil),
            Instrument(
                name: Name.connectionDuration, kind: .histogram, unit: "s",
                summary: "The duration of the successfully established outbound HTTP connections.",
                attributes: ["server.address", "server.port", "network.peer.address", "network.protocol.version"],
                buckets: advisedConnectionDurationBuckets),
            Instrument(
                name: Name.requestBodySize, kind: .histogram, unit: "By",
                summary: "Size of HTTP client request bodies.", attributes: outcome, buckets: advisedBodySizeBuckets),
            Instrument(
                name: Name.responseBodySize, kind: .histogram, unit: "By",
                summary: "Size of HTTP client response bodies.", attributes: outcome,
                buckets: advisedBodySizeBuckets),
            Instrument(
                name: Name.retries, kind: .counter, unit: "{retry}", summary: "Retries of HTTP client requests.",
                attributes: ["http.request.method", "http.response.status_code", "error.type"], buckets: nil),
            Instrument(
                name: Name.connectivityWaits, kind: .counter, unit: "{wait}",
                summary: "Waits for a network, one per taskIsWaitingForConnectivity.",
                attributes: ["http.request.method", "error.type"],
                buckets: nil),
            Instrument(
                name: Name.downloadMoveFailures, kind: .counter, unit: "{failure}",
                summary: "Downloads that could not be moved to their destination.", attributes: ["error.type"],
                buckets: nil),
            Instrument(
                name: Name.networkReachable, kind: .gauge, unit: "1",
                summary: "Whether the network is reachable: 1 or 0.", attributes: [], buckets: nil),
            Instrument(
                name: Name.reachabilityChanges, kind: .counter, unit: "{change}",
                summary: "Changes of network reachability.", attributes: ["herald.reachability.status"],
                buckets: nil),
        ]
    }()

    /// The advised bucket boundaries of each histogram, by name, in its unit (seconds for the timers,
    /// bytes for the sizes). Hand them to your backend — swift-otel's and swift-prometheus's factories take
    /// `durationHistogramBuckets` (as `Duration`s) and `valueHistogramBuckets` by metric name.
    public static let advisedBuckets: [String: [Double]] = Dictionary(
        uniqueKeysWithValues: instruments.compactMap { instrument in instrument.buckets.map { (instrument.name, $0) } })

    /// ``instruments`` by name.
    static let instrumentsByName = Dictionary(uniqueKeysWithValues: instruments.map { ($0.name, $0) })

    private struct Instruments: Sendable {
        let duration: Metrics.Timer
        let requestBodySize: Recorder
        let responseBodySize: Recorder
    }

    /// Where a request went: the dimensions known when it starts (`http.client.active_requests`'s), each
    /// already bounded; `serverAddress` and `serverPort` empty when not recorded.
    private struct Target: Hashable {
        var method: String
        var scheme: String
        var serverAddress: String
        var serverPort: String

        /// The target with every present value replaced by `_OTHER`, for combinations past the limit.
        var folded: Target {
            Target(
                method: fold(method), scheme: fold(scheme), serverAddress: fold(serverAddress),
                serverPort: fold(serverPort))
        }

        var dimensions: [(String, String)] {
            var dimensions = [("http.request.method", method)]
            if !serverAddress.isEmpty {
                dimensions.append(("server.address", serverAddress))
                dimensions.append(("server.port", serverPort))
            }
            dimensions.append(("url.scheme", scheme))
            return dimensions
        }
    }

    /// The dimension values of a completion: where it went and how it ended, each empty when absent.
    private struct DimensionValues: Hashable {
        var target: Target
        var statusCode: String
        var protocolVersion: String
        var errorType: String
        /// Where the response came from; duration only. Bounded (three values), so never folded.
        var source: ResponseSource

        /// The values with every present one replaced by `_OTHER`, for combinations past the limit.
        var folded: DimensionValues {
            DimensionValues(
                target: target.folded, statusCode: fold(statusCode), protocolVersion: fold(protocolVersion),
                errorType: fold(errorType), source: source)
        }

        var dimensions: [(String, String)] {
            var dimensions = target.dimensions
            if !statusCode.isEmpty { dimensions.append(("http.response.status_code", statusCode)) }
            if !protocolVersion.isEmpty { dimensions.append(("network.protocol.version", protocolVersion)) }
            if !errorType.isEmpty { dimensions.append(("error.type", errorType)) }
            return dimensions
        }
    }

    /// A task seen resuming and not yet complete.
    private struct TaskRecord {
        /// When it first resumed: the duration of a task that never reached the network counts from here.
        var started: Date
        /// Its bounded dimensions, worked out once at the first resume and reused at completion.
        var target: Target
        /// The `http.client.active_requests` meter it counts in while running.
        var meter: Meter
        /// Whether it is resumed and not suspended.
        var isRunning: Bool
        /// While it waits out a retry's delay, the token of the timer that ends the wait.
        var retryDelay: Int? = nil
        /// Whether it was retried: more than one transfer, so curl's time of the last is not the task's.
        var wasRetried = false
        /// Whether it waits for a network (`taskIsWaitingForConnectivity` until its end): no request is out.
        var isWaitingForConnectivity = false

        /// Whether it counts in `http.client.active_requests` now: running, and neither waiting to retry nor
        /// waiting for a network.
        var isCounted: Bool { isRunning && retryDelay == nil && !isWaitingForConnectivity }
    }

    private struct State {
        var instruments: [DimensionValues: Instruments] = [:]
        /// The dimension set of the last completion and its instruments: consecutive completions mostly share
        /// one, and comparing a few short strings costs less than hashing them.
        var lastInstruments: (values: DimensionValues, instruments: Instruments)?
        var activeMeters: [Target: Meter] = [:]
        /// The method and URL of the last task seen resuming for the first time, with its target and active
        /// requests meter: requests in a row mostly go to one place, and comparing a method and a URL costs
        /// less than reading the URL's parts, bounding them and hashing the target.
        var lastResumed: (method: String, url: URL, target: Target, meter: Meter)?
        /// The `host:port` pairs recorded under their own name in `server.address`.
        var serverAddresses: Set<String> = []
        var tasks: [TaskKey: TaskRecord] = [:]
        var moveFailures: [String: Counter] = [:]
        var retryCounters: [[String]: Counter] = [:]
        var waitCounters: [[String]: Counter] = [:]
        var reachabilityCounters: [String: Counter] = [:]
        /// `http.client.request.time_in_queue`'s timers, by target and protocol version.
        var queueTimers: [QueueValues: Metrics.Timer] = [:]
        /// `herald.network.reachable`, made at the first status announced: no value before.
        var networkReachable: Meter?
        /// Each session's connections to one origin through one peer, while it has any: the counts last
        /// announced (a change's meters move by the difference) and the meters.
        var connectionGroups: [ConnectionGroup: ConnectionGroupRecord] = [:]
        /// The token of the last retry delay started: a delay's timer ends it only if no later one began.
        var lastRetryToken = 0
        /// `http.client.open_connections`'s meters, by bounded dimensions and state.
        var connectionMeters: [ConnectionMeterKey: Meter] = [:]
        /// `http.client.connection.duration`'s timers, by bounded dimensions and protocol version.
        var connectionTimers: [ConnectionTimerKey: Metrics.Timer] = [:]
        /// The peer addresses recorded under their own name in `network.peer.address`.
        var peerAddresses: Set<String> = []
    }

    /// One session's connections to one origin through one peer address: what a
    /// `connectionDidChangeState`'s counts are about.
    private struct ConnectionGroup: Hashable {
        var sessionIdentifier: Int
        var scheme: String
        var host: String
        var port: Int
        var peerAddress: String?
    }

    private struct ConnectionCounts: Equatable {
        var active = 0
        var idle = 0
    }

    /// What the observer keeps of a ``ConnectionGroup``.
    private struct ConnectionGroupRecord {
        let values: ConnectionValues
        var counts: ConnectionCounts
        let active: Meter
        let idle: Meter
    }

    /// The bounded dimensions of the connection instruments but the state and the protocol version; each
    /// empty when not recorded.
    private struct ConnectionValues: Hashable {
        var serverAddress: String
        var serverPort: String
        var peerAddress: String

        var folded: ConnectionValues {
            ConnectionValues(
                serverAddress: fold(serverAddress), serverPort: fold(serverPort), peerAddress: fold(peerAddress))
        }

        var dimensions: [(String, String)] {
            var dimensions: [(String, String)] = []
            if !serverAddress.isEmpty {
                dimensions.append(("server.address", serverAddress))
                dimensions.append(("server.port", serverPort))
            }
            if !peerAddress.isEmpty { dimensions.append(("network.peer.address", peerAddress)) }
            return dimensions
        }
    }

    private struct ConnectionMeterKey: Hashable {
        var values: ConnectionValues
        var state: ConnectionState
    }

    private struct ConnectionTimerKey: Hashable {
        var values: ConnectionValues
        var protocolVersion: String
    }

    /// The dimension values of `http.client.request.time_in_queue`.
    private struct QueueValues: Hashable {
        var target: Target
        var protocolVersion: String

        var dimensions: [(String, String)] {
            target.dimensions + (protocolVersion.isEmpty ? [] : [("network.protocol.version", protocolVersion)])
        }
    }

    private let factory: any MetricsFactory
    private let configuration: Configuration
    private let scheduler: any ObserverScheduler
    private let state = Locked(State())

    /// Creates a metrics observer.
    /// - Parameters:
    ///   - factory: The metrics backend, such as your application's bootstrapped `MetricsSystem.factory`.
    ///   - configuration: Options; default ``Configuration/init()``.
    ///   - scheduler: How a retry's delay is waited out before the task counts as active again; default
    ///     ``DispatchObserverScheduler``. Tests pass a manual one.
    public init(
        factory: any MetricsFactory, configuration: Configuration = Configuration(),
        scheduler: any ObserverScheduler = DispatchObserverScheduler()
    ) {
        self.factory = factory
        self.configuration = configuration
        self.scheduler = scheduler
    }

    deinit {
        // The observer is gone with requests running and connections open: their meters would keep those counts
        // for ever, as a backend keeps a series by its dimensions. What this observer added, it takes back.
        let (running, connections) = state.withLock { state in
            (
                state.tasks.values.filter(\.isCounted).map(\.meter),
                Array(state.connectionGroups.values)
            )
        }
        Self.takeBack(running: running, connections: connections)
    }

    /// Takes back what the observer counted in `http.client.active_requests` and `http.client.open_connections`
    /// for the tasks and connections it will hear nothing more of.
    private static func takeBack(running: [Meter], connections: [ConnectionGroupRecord]) {
        for meter in running { meter.decrement() }
        for group in connections {
            if group.counts.active > 0 { group.active.decrement(by: Double(group.counts.active)) }
            if group.counts.idle > 0 { group.idle.decrement(by: Double(group.counts.idle)) }
        }
    }

    /// A registration of the observer ended (its token cancelled or released) while the observer lives on:
    /// the requests it announced as running and the connections it announced as open, which it will now hear
    /// nothing more of, are taken back out of `http.client.active_requests` and
    /// `http.client.open_connections`, and no duration is recorded for them (their outcome is unknown).
    /// - Parameter end: What the registration left open.
    public func observationDidEnd(_ end: ObservationEnd) {
        let (running, connections) = state.withLock { state -> ([Meter], [ConnectionGroupRecord]) in
            let running = end.openTasks.compactMap { state.tasks.removeValue(forKey: TaskKey($0)) }
                .filter(\.isCounted).map(\.meter)
            let groups = state.connectionGroups.keys.filter { end.connectionSessions.contains($0.sessionIdentifier) }
            return (running, groups.compactMap { state.connectionGroups.removeValue(forKey: $0) })
        }
        Self.takeBack(running: running, connections: connections)
    }

    /// `dimensions`, with the instrument's `unit` and `description` when ``Configuration/describesInstruments``.
    private func described(_ name: String, _ dimensions: [(String, String)]) -> [(String, String)] {
        guard configuration.describesInstruments, let instrument = Self.instrumentsByName[name] else {
            return dimensions
        }
        return dimensions + [("unit", instrument.unit), ("description", instrument.summary)]
    }

    /// Counts one wait under `herald.client.request.connectivity_waits`, and stops counting the task in
    /// `http.client.active_requests` until the wait ends (`taskDidEndWaitingForConnectivity`, or its
    /// completion): it has no request out meanwhile.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let wait = notification.userInfo
        let key = TaskKey(wait)
        let active = state.withLock { state -> Meter? in
            guard let record = state.tasks[key], !record.isWaitingForConnectivity else { return nil }
            state.tasks[key]?.isWaitingForConnectivity = true
            return record.isCounted ? record.meter : nil
        }
        active?.decrement()
        let values = [
            KnownHTTPMethod.bounded(wait.request.method, known: configuration.knownMethods),
            wait.error.code.description,
        ]
        let counter = state.withLock { state -> Counter in
            if let existing = state.waitCounters[values] { return existing }
            // Both dimensions are bounded (known methods, error codes): no folding needed.
            let counter = Counter(
                label: Name.connectivityWaits,
                dimensions: described(
                    Name.connectivityWaits, [("http.request.method", values[0]), ("error.type", values[1])]),
                factory: factory)
            state.waitCounters[values] = counter
            return counter
        }
        counter.increment()
    }

    /// Counts the task in `http.client.active_requests` again, if it is running: a network came back and its
    /// attempt starts again.
    /// - Parameter notification: `taskDidEndWaitingForConnectivity`.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let key = TaskKey(notification.userInfo)
        let active = state.withLock { state -> Meter? in
            guard let record = state.tasks[key], record.isWaitingForConnectivity else { return nil }
            state.tasks[key]?.isWaitingForConnectivity = false
            return state.tasks[key]?.isCounted == true ? record.meter : nil
        }
        active?.increment()
    }

    /// Sets `herald.network.reachable` and counts the change under `herald.network.reachability.changes`.
    /// The gauge is made at the first known status: until reachability is watched it has no value, rather
    /// than a 0 that would read as "no network". A change of a monitor that follows one host
    /// (`ReachabilityChange.host`) is about that host's route, not the network: neither records it.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        guard notification.userInfo.host == nil else { return }
        let status = notification.userInfo.status
        let label = status.label
        let value: Int?
        switch status {
        case .unknown: value = nil
        case .notReachable: value = 0
        case .reachable: value = 1
        }
        let (counter, gauge) = state.withLock { state -> (Counter, Meter?) in
            var gauge = state.networkReachable
            if gauge == nil, value != nil {
                gauge = Meter(
                    label: Name.networkReachable, dimensions: described(Name.networkReachable, []), factory: factory)
                state.networkReachable = gauge
            }
            if let existing = state.reachabilityCounters[label] { return (existing, gauge) }
            let counter = Counter(
                label: Name.reachabilityChanges,
                dimensions: described(Name.reachabilityChanges, [("herald.reachability.status", label)]),
                factory: factory)
            state.reachabilityCounters[label] = counter
            return (counter, gauge)
        }
        counter.increment()
        if let value { gauge?.set(value) }
    }

    /// Counts the task as running.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        let date = notification.userInfo.date
        let request = notification.userInfo.request
        let meter = state.withLock { state -> Meter? in
            // One lookup for a task seen before: a later resume only counts it again.
            if let record = state.tasks[key] {
                guard !record.isRunning else { return nil }
                state.tasks[key]?.isRunning = true
                return state.tasks[key]?.isCounted == true ? record.meter : nil
            }
            let target: Target
            let meter: Meter
            if let last = state.lastResumed, last.method == request.method, last.url == request.url {
                (target, meter) = (last.target, last.meter)
            } else {
                target = targetLocked(method: request.method, url: request.url, in: &state)
                meter = activeMeterLocked(for: target, in: &state)
                state.lastResumed = (request.method, request.url, target, meter)
            }
            state.tasks[key] = TaskRecord(started: date, target: target, meter: meter, isRunning: true)
            return meter
        }
        meter?.increment()
    }

    /// Stops counting the task as running.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        let meter = state.withLock { state -> Meter? in
            guard let record = state.tasks[key], record.isRunning else { return nil }
            state.tasks[key]?.isRunning = false
            return record.isCounted ? record.meter : nil
        }
        meter?.decrement()
    }

    /// Counts one retry under `herald.client.request.retries`; a retry with a delay stops counting the task
    /// in `http.client.active_requests` until the delay has passed.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let retry = notification.userInfo
        // What is left of the delay: delivery on the observer's queue may come late.
        let remaining = retry.remainingDelay()
        if remaining > 0 {
            startRetryDelay(of: TaskKey(retry), for: remaining)
        } else {
            state.withLock { $0.tasks[TaskKey(retry)]?.wasRetried = true }
        }
        var values = [
            KnownHTTPMethod.bounded(retry.request.method, known: configuration.knownMethods),
            retry.response.map { HTTPAttributeValue.statusCode($0.statusCode) } ?? "",
            HTTPAttributeValue.errorType(error: retry.error, response: retry.response) ?? "",
        ]
        let counter = state.withLock { state -> Counter in
            if let existing = state.retryCounters[values] { return existing }
            if state.retryCounters.count >= configuration.maximumDimensionSets {
                values = values.map(fold)
                if let existing = state.retryCounters[values] { return existing }
            }
            var dimensions = [("http.request.method", values[0])]
            if !values[1].isEmpty { dimensions.append(("http.response.status_code", values[1])) }
            if !values[2].isEmpty { dimensions.append(("error.type", values[2])) }
            // Created under the lock so each is made exactly once; the factory is not user code.
            let counter = Counter(
                label: Name.retries, dimensions: described(Name.retries, dimensions), factory: factory)
            state.retryCounters[values] = counter
            return counter
        }
        counter.increment()
    }

    /// Stops counting the task as active until `delay` has passed (its next attempt has started then).
    private func startRetryDelay(of key: TaskKey, for delay: TimeInterval) {
        let (meter, token) = state.withLock { state -> (Meter?, Int?) in
            guard let record = state.tasks[key] else { return (nil, nil) }
            state.tasks[key]?.wasRetried = true
            state.lastRetryToken += 1
            state.tasks[key]?.retryDelay = state.lastRetryToken
            return (record.isCounted ? record.meter : nil, state.lastRetryToken)
        }
        meter?.decrement()
        guard let token else { return }
        scheduler.schedule(after: delay) { [weak self] in self?.endRetryDelay(of: key, token: token) }
    }

    /// A retry's delay passed: the task counts as active again if it is running, unless a later retry's
    /// delay began or it completed meanwhile.
    private func endRetryDelay(of key: TaskKey, token: Int) {
        let meter = state.withLock { state -> Meter? in
            guard let record = state.tasks[key], record.retryDelay == token else { return nil }
            state.tasks[key]?.retryDelay = nil
            return state.tasks[key]?.isCounted == true ? record.meter : nil
        }
        meter?.increment()
    }

    /// Records duration and body sizes, and stops counting the task as running.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        // The payload is read in place, not copied: it is large, and this runs for every task. The task (the
        // object, when there is one) says how many transfers it ran: an authentication round-trip or a wait for
        // connectivity is one more, as a retry or a redirect is.
        let transfers = (notification.object as? SessionTask)?.hopMetrics.count ?? 1
        record(notification.userInfo, transfers: transfers)
    }

    private func record(_ completion: TaskCompletion, transfers: Int) {
        let key = TaskKey(completion)
        let metrics = completion.metrics
        let (record, instruments, queueTimer) = state.withLock {
            state -> (TaskRecord?, Instruments?, Metrics.Timer?) in
            let record = state.tasks.removeValue(forKey: key)
            // A task that never resumed (cancelled while suspended) made no request: no series, no server slot.
            guard metrics != nil || record != nil else { return (record, nil, nil) }
            let values = dimensionValuesLocked(for: completion, target: record?.target, in: &state)
            let queueTimer = metrics?.timeInQueue == nil ? nil : queueTimerLocked(for: values, in: &state)
            return (record, instrumentsLocked(for: values, in: &state), queueTimer)
        }
        if let record, record.isCounted { record.meter.decrement() }
        guard let instruments else { return }
        let seconds = Self.duration(of: completion, record: record, transfers: transfers)
        instruments.duration.recordNanoseconds(Self.nanoseconds(seconds))
        if let metrics {
            // A body size only for a request that went out, and for a response that arrived: a connection
            // that failed sent and received no body, and a 0 would read as an empty one.
            if metrics.requestHeaderBytes > 0 { instruments.requestBodySize.record(metrics.requestBodyBytes) }
            if HTTPAttributeValue.receivedBody(completion) {
                instruments.responseBodySize.record(metrics.responseBodyBytes)
            }
            if let queueTimer, let queued = metrics.timeInQueue {
                queueTimer.recordNanoseconds(Self.nanoseconds(queued))
            }
        }
    }

    /// How long a completed task took: from its first resume to the end of its transfer when one transfer was
    /// all of it (what ran before the transfer, such as an interceptor's adapter, included; the completion
    /// handler that runs after it not); from its first resume to its completion when it ran several (retried,
    /// redirected, an authentication round-trip, a wait for connectivity: curl timed the last transfer only)
    /// or never reached the network.
    private static func duration(of completion: TaskCompletion, record: TaskRecord?, transfers: Int) -> TimeInterval {
        let sinceResume = record.map { completion.date.timeIntervalSince($0.started) }
        guard let metrics = completion.metrics else { return sinceResume ?? 0 }
        if let sinceResume, transfers > 1 || record?.wasRetried == true || metrics.redirectCount > 0 {
            return max(sinceResume, metrics.total)
        }
        let beforeTransfer = record.map { max(0, metrics.startDate.timeIntervalSince($0.started)) } ?? 0
        return beforeTransfer + metrics.total
    }

    /// `seconds` in whole nanoseconds, 0 for a negative or not-a-number value.
    private static func nanoseconds(_ seconds: TimeInterval) -> Int64 {
        guard seconds > 0 else { return 0 }
        return Int64(min(seconds, 9e9) * 1_000_000_000)
    }

    /// Counts the failed move under `herald.download.move_failures`, by `error.type` (the error code's
    /// description: bounded, as the codes are).
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        let errorType = notification.userInfo.error.code.description
        let counter = state.withLock { state -> Counter in
            // Created once per code, under the lock, as the timers are: the factory is not user code.
            if let existing = state.moveFailures[errorType] { return existing }
            let counter = Counter(
                label: Name.downloadMoveFailures,
                dimensions: described(Name.downloadMoveFailures, [("error.type", errorType)]), factory: factory)
            state.moveFailures[errorType] = counter
            return counter
        }
        counter.increment()
    }

    /// `true`: the open-connections meters and the connection durations come from `connectionDidChangeState`.
    public var observesConnections: Bool { true }

    /// Moves `http.client.open_connections` by the change's new counts, and times a closed connection under
    /// `http.client.connection.duration`.
    ///
    /// Each change carries how many of its session's connections to the origin are active and idle now,
    /// and the meters move by the difference from the counts last seen: an observer added while connections
    /// are open counts them from their next change on, and never below zero.
    /// - Parameter notification: `connectionDidChangeState`.
    public func connectionDidChangeState(_ notification: TypedNotification<ConnectionStateChange>) {
        let change = notification.userInfo
        let group = ConnectionGroup(
            sessionIdentifier: change.sessionIdentifier, scheme: change.scheme, host: change.host, port: change.port,
            peerAddress: change.peerAddress)
        let counts = ConnectionCounts(active: change.activeConnections, idle: change.idleConnections)
        let (record, previous, timer) = state.withLock {
            state -> (ConnectionGroupRecord, ConnectionCounts, Metrics.Timer?) in
            // A kept connection changes state with every request: its group's record holds the meters, so that
            // a change costs one lookup.
            let record: ConnectionGroupRecord
            let previous: ConnectionCounts
            if let index = state.connectionGroups.index(forKey: group) {
                record = state.connectionGroups.values[index]
                previous = record.counts
                if counts == ConnectionCounts() {
                    state.connectionGroups.remove(at: index)
                } else {
                    state.connectionGroups.values[index].counts = counts
                }
            } else {
                let values = connectionValuesLocked(for: change, in: &state)
                record = ConnectionGroupRecord(
                    values: values, counts: counts, active: connectionMeterLocked(values, .active, in: &state),
                    idle: connectionMeterLocked(values, .idle, in: &state))
                previous = ConnectionCounts()
                if counts != ConnectionCounts() { state.connectionGroups[group] = record }
            }
            let timer =
                change.state == .closed
                ? connectionTimerLocked(record.values, protocolVersion: change.protocolVersion, in: &state) : nil
            return (record, previous, timer)
        }
        // Differences add up in any order, so the meters move outside the lock, as the other meters do.
        for (meter, delta) in [
            (record.active, counts.active - previous.active), (record.idle, counts.idle - previous.idle),
        ] {
            if delta > 0 {
                meter.increment(by: Double(delta))
            } else if delta < 0 {
                meter.decrement(by: Double(-delta))
            }
        }
        timer?.recordNanoseconds(Self.nanoseconds(change.age))
    }

    /// Forgets the session's tasks that are still counted as running.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let session = notification.userInfo.sessionIdentifier
        let running = state.withLock { state -> [Meter] in
            let running = state.tasks.lazy.filter { $0.key.sessionIdentifier == session && $0.value.isCounted }
                .map(\.value.meter)
            state.tasks = state.tasks.filter { $0.key.sessionIdentifier != session }
            return Array(running)
        }
        for meter in running { meter.decrement() }
    }

    // MARK: - dimensions

    /// The bounded dimensions of a request to `url` with `method`. Called with the lock held: it counts the
    /// distinct server addresses.
    private func targetLocked(method: String, url: URL, in state: inout State) -> Target {
        var target = Target(
            method: KnownHTTPMethod.bounded(method, known: configuration.knownMethods),
            scheme: HTTPAttributeValue.scheme(of: url), serverAddress: "", serverPort: "")
        guard configuration.includesServerAddress else { return target }
        (target.serverAddress, target.serverPort) = serverLocked(
            host: HTTPAttributeValue.serverAddress(of: url) ?? "", port: url.effectivePort.map(String.init) ?? "",
            in: &state)
        return target
    }

    /// `server.address` and `server.port` for `host` and `port`: themselves (`_OTHER` for an empty one) for
    /// the first ``Configuration/maximumServerAddresses`` pairs seen, `_OTHER` for later ones. Called with
    /// the lock held: it counts the distinct pairs.
    private func serverLocked(host: String, port: String, in state: inout State) -> (String, String) {
        guard bounded("\(host):\(port)", in: &state.serverAddresses) else {
            return (HTTPAttributeValue.other, HTTPAttributeValue.other)
        }
        return (host.isEmpty ? HTTPAttributeValue.other : host, port.isEmpty ? HTTPAttributeValue.other : port)
    }

    /// Whether `value` may be recorded as itself: it is in `seen`, or `seen` has room for it (it is added).
    private func bounded(_ value: String, in seen: inout Set<String>) -> Bool {
        guard seen.contains(value) || seen.count < configuration.maximumServerAddresses else { return false }
        seen.insert(value)
        return true
    }

    /// The dimensions of a completion; `target` is the task's, when it was seen resuming. The status, the
    /// version and the timings are the last transfer's: after a redirect to another server, the target is
    /// that server (the final URL's).
    private func dimensionValuesLocked(
        for completion: TaskCompletion, target: Target?, in state: inout State
    ) -> DimensionValues {
        let response = completion.response
        let request = completion.request
        let final = completion.finalURL.flatMap { url in
            RedirectRules.isSameOrigin(url, request.url) ? nil : url
        }
        return DimensionValues(
            target: final.map { targetLocked(method: request.method, url: $0, in: &state) } ?? target
                ?? targetLocked(method: request.method, url: request.url, in: &state),
            statusCode: response.map { HTTPAttributeValue.statusCode($0.statusCode) } ?? "",
            protocolVersion: HTTPAttributeValue.protocolVersion(of: completion) ?? "",
            errorType: HTTPAttributeValue.errorType(error: completion.error, response: response) ?? "",
            source: completion.responseSource)
    }

    /// The `http.client.active_requests` meter of a target, created on first use under the lock (so once).
    private func activeMeterLocked(for target: Target, in state: inout State) -> Meter {
        if let existing = state.activeMeters[target] { return existing }
        var target = target
        if state.activeMeters.count >= configuration.maximumDimensionSets {
            target = target.folded
            if let existing = state.activeMeters[target] { return existing }
        }
        let meter = Meter(
            label: Name.activeRequests, dimensions: described(Name.activeRequests, target.dimensions), factory: factory)
        state.activeMeters[target] = meter
        return meter
    }

    /// The cached instruments for a dimension set, created on first use. Called with the lock held:
    /// creating a metric calls only the factory, never user code, and doing it under the lock is what
    /// guarantees each one is created exactly once.
    private func instrumentsLocked(for values: DimensionValues, in state: inout State) -> Instruments {
        if let last = state.lastInstruments, last.values == values { return last.instruments }
        let instruments = cachedInstrumentsLocked(for: values, in: &state)
        state.lastInstruments = (values, instruments)
        return instruments
    }

    private func cachedInstrumentsLocked(for values: DimensionValues, in state: inout State) -> Instruments {
        if let existing = state.instruments[values] { return existing }
        var values = values
        if state.instruments.count >= configuration.maximumDimensionSets {
            values = values.folded
            if let existing = state.instruments[values] { return existing }
        }
        let dimensions = values.dimensions
        let durationDimensions = dimensions + [(Self.responseSourceAttribute, values.source.rawValue)]
        let instruments = Instruments(
            duration: Metrics.Timer(
                label: Name.requestDuration, dimensions: described(Name.requestDuration, durationDimensions),
                preferredDisplayUnit: .seconds, factory: factory),
            requestBodySize: Recorder(
                label: Name.requestBodySize, dimensions: described(Name.requestBodySize, dimensions), factory: factory),
            responseBodySize: Recorder(
                label: Name.responseBodySize, dimensions: described(Name.responseBodySize, dimensions),
                factory: factory))
        state.instruments[values] = instruments
        return instruments
    }

    /// The bounded dimensions of a connection's instruments. Called with the lock held: it counts the distinct
    /// server and peer addresses.
    private func connectionValuesLocked(for change: ConnectionStateChange, in state: inout State) -> ConnectionValues {
        var values = ConnectionValues(serverAddress: "", serverPort: "", peerAddress: "")
        if configuration.includesServerAddress {
            (values.serverAddress, values.serverPort) = serverLocked(
                host: change.host.lowercased(), port: String(change.port), in: &state)
        }
        if let peer = change.peerAddress {
            values.peerAddress = bounded(peer, in: &state.peerAddresses) ? peer : HTTPAttributeValue.other
        }
        return values
    }

    /// The `http.client.open_connections` meter of a dimension set and state, made on first use under the
    /// lock (so once).
    private func connectionMeterLocked(
        _ values: ConnectionValues, _ connectionState: ConnectionState, in state: inout State
    ) -> Meter {
        var key = ConnectionMeterKey(values: values, state: connectionState)
        if let existing = state.connectionMeters[key] { return existing }
        if state.connectionMeters.count >= configuration.maximumDimensionSets {
            key.values = values.folded
            if let existing = state.connectionMeters[key] { return existing }
        }
        let meter = Meter(
            label: Name.openConnections,
            dimensions: described(
                Name.openConnections, [("http.connection.state", connectionState.rawValue)] + key.values.dimensions),
            factory: factory)
        state.connectionMeters[key] = meter
        return meter
    }

    /// The `http.client.connection.duration` timer of a dimension set and protocol version, made on first use
    /// under the lock (so once).
    private func connectionTimerLocked(
        _ values: ConnectionValues, protocolVersion: String?, in state: inout State
    ) -> Metrics.Timer {
        var key = ConnectionTimerKey(values: values, protocolVersion: protocolVersion ?? "")
        if let existing = state.connectionTimers[key] { return existing }
        if state.connectionTimers.count >= configuration.maximumDimensionSets {
            key = ConnectionTimerKey(values: values.folded, protocolVersion: fold(key.protocolVersion))
            if let existing = state.connectionTimers[key] { return existing }
        }
        let dimensions =
            key.values.dimensions
            + (key.protocolVersion.isEmpty ? [] : [("network.protocol.version", key.protocolVersion)])
        let timer = Metrics.Timer(
            label: Name.connectionDuration, dimensions: described(Name.connectionDuration, dimensions),
            preferredDisplayUnit: .seconds, factory: factory)
        state.connectionTimers[key] = timer
        return timer
    }

    /// The `http.client.request.time_in_queue` timer of a completion's dimensions, made on first use under
    /// the lock (so once).
    private func queueTimerLocked(for values: DimensionValues, in state: inout State) -> Metrics.Timer {
        var key = QueueValues(target: values.target, protocolVersion: values.protocolVersion)
        if let existing = state.queueTimers[key] { return existing }
        if state.queueTimers.count >= configuration.maximumDimensionSets {
            key = QueueValues(target: key.target.folded, protocolVersion: fold(key.protocolVersion))
            if let existing = state.queueTimers[key] { return existing }
        }
        let timer = Metrics.Timer(
            label: Name.timeInQueue, dimensions: described(Name.timeInQueue, key.dimensions),
            preferredDisplayUnit: .seconds, factory: factory)
        state.queueTimers[key] = timer
        return timer
    }
}

/// `value` with `_OTHER` in place of a present value, for dimension sets folded past their limit.
private func fold(_ value: String) -> String { value.isEmpty ? "" : HTTPAttributeValue.other }
