import Foundation
import Herald
import HeraldNotifications
import Metrics

/// Records HTTP client metrics on swift-metrics under OpenTelemetry's names and attributes.
///
/// - `http.client.request.duration`: a timer (preferred unit seconds) per completed task, from curl's
///   total time, or from resume to completion when the task never reached the network. Backends choose
///   histogram buckets themselves; give them ``advisedDurationBuckets`` (OpenTelemetry's advice for this
///   metric) — Prometheus's default buckets stop at 10 s with too few below 100 ms.
/// - `http.client.active_requests`: a meter of the tasks running now (resumed, not suspended or complete),
///   with `http.request.method`, `server.address`, `server.port` and `url.scheme`.
/// - `http.client.request.body.size` and `http.client.response.body.size`: recorders of body bytes.
/// - `herald.download.move_failures`: a counter of finished downloads that could not be moved to their
///   destination (`downloadDidFailToMoveFile`; the file was kept), with the dimension `error.type`.
/// - `herald.client.request.retries`: a counter of retries (`taskWillRetry`), with the method, the failed
///   attempt's `http.response.status_code` and its `error.type` as dimensions.
/// - `herald.client.request.connectivity_waits`: a counter of tasks that waited for a network
///   (`taskIsWaitingForConnectivity`), with the method and the error type as dimensions.
/// - `herald.network.reachable`: a meter, 1 while the last reachability status announced on the center was
///   reachable, 0 while not (`reachabilityDidChange`); and `herald.network.reachability.changes`, a counter
///   of changes with the new status's label (`reachable_via_ethernet`, `not_reachable` …) as dimension.
///
/// The duration and body-size metrics carry OpenTelemetry's attributes for HTTP client requests:
///
/// | dimension | value | present |
/// |---|---|---|
/// | `http.request.method` | `GET`, `POST`, … (the nine known methods), anything else `_OTHER` | always |
/// | `server.address` | the URL's host | always (see ``Configuration/includesServerAddress``) |
/// | `server.port` | the port, or the scheme's default | always (with `server.address`) |
/// | `url.scheme` | `http` or `https` | always |
/// | `http.response.status_code` | `100`…`599`, anything else `_OTHER` | when a response arrived |
/// | `network.protocol.version` | `1.0`, `1.1`, `2` or `3` | when a response arrived |
/// | `error.type` | the status code for a response of 400 or more, else `HeraldError.Code`'s description | on failure |
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
    }

    /// OpenTelemetry's advised histogram bucket boundaries for `http.client.request.duration`, in seconds:
    /// 5 ms to 10 s, dense below one second where HTTP latencies mostly fall.
    ///
    /// swift-metrics leaves buckets to the backend, so hand these to yours, for example
    /// `prometheusFactory.durationHistogramBuckets[MetricsObserver.Name.requestDuration] =
    /// MetricsObserver.advisedDurationBuckets.map { .nanoseconds(Int64($0 * 1e9)) }`.
    public static let advisedDurationBuckets: [Double] = [
        0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ]

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

        /// The values with every present one replaced by `_OTHER`, for combinations past the limit.
        var folded: DimensionValues {
            DimensionValues(
                target: target.folded, statusCode: fold(statusCode), protocolVersion: fold(protocolVersion),
                errorType: fold(errorType))
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
        /// Whether it counts in `http.client.active_requests` now (resumed, not suspended).
        var isRunning: Bool
    }

    private struct State {
        var instruments: [DimensionValues: Instruments] = [:]
        /// The dimension set of the last completion and its instruments: consecutive completions mostly share
        /// one, and comparing a few short strings costs less than hashing them.
        var lastInstruments: (values: DimensionValues, instruments: Instruments)?
        var activeMeters: [Target: Meter] = [:]
        /// The `host:port` pairs recorded under their own name in `server.address`.
        var serverAddresses: Set<String> = []
        var tasks: [TaskKey: TaskRecord] = [:]
        var moveFailures: [String: Counter] = [:]
        var retryCounters: [[String]: Counter] = [:]
        var waitCounters: [[String]: Counter] = [:]
        var reachabilityCounters: [String: Counter] = [:]
    }

    private let factory: any MetricsFactory
    private let configuration: Configuration
    private let state = Locked(State())

    /// Creates a metrics observer.
    /// - Parameters:
    ///   - factory: The metrics backend, such as your application's bootstrapped `MetricsSystem.factory`.
    ///   - configuration: Options; default ``Configuration/init()``.
    public init(factory: any MetricsFactory, configuration: Configuration = Configuration()) {
        self.factory = factory
        self.configuration = configuration
        self.networkReachable = Meter(label: Name.networkReachable, dimensions: [], factory: factory)
    }

    private let networkReachable: Meter

    /// Counts one wait under `herald.client.request.connectivity_waits`.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let wait = notification.userInfo
        let values = [KnownHTTPMethod.bounded(wait.request.method), wait.error.code.description]
        let counter = state.withLock { state -> Counter in
            if let existing = state.waitCounters[values] { return existing }
            // Both dimensions are bounded (known methods, error codes): no folding needed.
            let counter = Counter(
                label: Name.connectivityWaits,
                dimensions: [("http.request.method", values[0]), ("error.type", values[1])], factory: factory)
            state.waitCounters[values] = counter
            return counter
        }
        counter.increment()
    }

    /// Sets `herald.network.reachable` and counts the change under `herald.network.reachability.changes`.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        let status = notification.userInfo.status
        let label = status.label
        let counter = state.withLock { state -> Counter in
            if let existing = state.reachabilityCounters[label] { return existing }
            let counter = Counter(
                label: Name.reachabilityChanges, dimensions: [("herald.reachability.status", label)], factory: factory)
            state.reachabilityCounters[label] = counter
            return counter
        }
        counter.increment()
        switch status {
        case .unknown: break
        case .notReachable: networkReachable.set(0)
        case .reachable: networkReachable.set(1)
        }
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
                return record.meter
            }
            let target = targetLocked(method: request.method, url: request.url, in: &state)
            let meter = activeMeterLocked(for: target, in: &state)
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
            return record.meter
        }
        meter?.decrement()
    }

    /// Counts one retry under `herald.client.request.retries`.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let retry = notification.userInfo
        var values = [
            KnownHTTPMethod.bounded(retry.request.method),
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
            dimensions.append(("error.type", values[2]))
            // Created under the lock so each is made exactly once; the factory is not user code.
            let counter = Counter(label: Name.retries, dimensions: dimensions, factory: factory)
            state.retryCounters[values] = counter
            return counter
        }
        counter.increment()
    }

    /// Records duration and body sizes, and stops counting the task as running.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        // The payload is read in place, not copied: it is large, and this runs for every task.
        record(notification.userInfo)
    }

    private func record(_ completion: TaskCompletion) {
        let key = TaskKey(completion)
        let (record, instruments) = state.withLock { state in
            let record = state.tasks.removeValue(forKey: key)
            let values = dimensionValuesLocked(for: completion, target: record?.target, in: &state)
            return (record, instrumentsLocked(for: values, in: &state))
        }
        if let record, record.isRunning { record.meter.decrement() }
        // A task that never resumed (cancelled while suspended) made no request: nothing to time.
        let metrics = completion.metrics
        guard metrics != nil || record != nil else { return }
        let seconds = metrics?.total ?? record.map { completion.date.timeIntervalSince($0.started) } ?? 0
        instruments.duration.recordNanoseconds(Int64(max(0, seconds) * 1_000_000_000))
        if let metrics {
            instruments.requestBodySize.record(metrics.requestBodyBytes)
            instruments.responseBodySize.record(metrics.responseBodyBytes)
        }
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
                label: Name.downloadMoveFailures, dimensions: [("error.type", errorType)], factory: factory)
            state.moveFailures[errorType] = counter
            return counter
        }
        counter.increment()
    }

    /// Forgets the session's tasks that are still counted as running.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let session = notification.userInfo.sessionIdentifier
        let running = state.withLock { state -> [Meter] in
            let running = state.tasks.lazy.filter { $0.key.sessionIdentifier == session && $0.value.isRunning }
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
            method: KnownHTTPMethod.bounded(method), scheme: HTTPAttributeValue.scheme(of: url), serverAddress: "",
            serverPort: "")
        guard configuration.includesServerAddress else { return target }
        let host = url.host ?? ""
        let port = url.effectivePort.map(String.init) ?? ""
        let address = "\(host):\(port)"
        let isKnown = state.serverAddresses.contains(address)
        if isKnown || state.serverAddresses.count < configuration.maximumServerAddresses {
            state.serverAddresses.insert(address)
            target.serverAddress = host.isEmpty ? HTTPAttributeValue.other : host
            target.serverPort = port.isEmpty ? HTTPAttributeValue.other : port
        } else {
            target.serverAddress = HTTPAttributeValue.other
            target.serverPort = HTTPAttributeValue.other
        }
        return target
    }

    /// The dimensions of a completion; `target` is the task's, when it was seen resuming.
    private func dimensionValuesLocked(
        for completion: TaskCompletion, target: Target?, in state: inout State
    ) -> DimensionValues {
        let response = completion.response
        return DimensionValues(
            target: target
                ?? targetLocked(method: completion.request.method, url: completion.request.url, in: &state),
            statusCode: response.map { HTTPAttributeValue.statusCode($0.statusCode) } ?? "",
            protocolVersion: response.map { HTTPAttributeValue.protocolVersion($0.httpVersion) } ?? "",
            errorType: HTTPAttributeValue.errorType(error: completion.error, response: response) ?? "")
    }

    /// The `http.client.active_requests` meter of a target, created on first use under the lock (so once).
    private func activeMeterLocked(for target: Target, in state: inout State) -> Meter {
        if let existing = state.activeMeters[target] { return existing }
        var target = target
        if state.activeMeters.count >= configuration.maximumDimensionSets {
            target = target.folded
            if let existing = state.activeMeters[target] { return existing }
        }
        let meter = Meter(label: Name.activeRequests, dimensions: target.dimensions, factory: factory)
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
        let instruments = Instruments(
            duration: Metrics.Timer(
                label: Name.requestDuration, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory),
            requestBodySize: Recorder(label: Name.requestBodySize, dimensions: dimensions, factory: factory),
            responseBodySize: Recorder(label: Name.responseBodySize, dimensions: dimensions, factory: factory))
        state.instruments[values] = instruments
        return instruments
    }
}

/// `value` with `_OTHER` in place of a present value, for dimension sets folded past their limit.
private func fold(_ value: String) -> String { value.isEmpty ? "" : HTTPAttributeValue.other }
