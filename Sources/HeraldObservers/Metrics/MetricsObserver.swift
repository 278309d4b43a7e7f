import Foundation
import Herald
import HeraldNotifications
import Metrics

/// Records HTTP client metrics on swift-metrics under OpenTelemetry's names.
///
/// - `http.client.request.duration`: a timer (preferred unit seconds) per completed task, from curl's
///   total time, or from resume to completion when the task never reached the network.
/// - `http.client.active_requests`: a meter of the tasks running now (resumed, not suspended or complete).
/// - `http.client.request.body.size` and `http.client.response.body.size`: recorders of body bytes.
/// - `herald.download.move_failures`: a counter of finished downloads that could not be moved to their
///   destination (`downloadDidFailToMoveFile`; the file was kept), with the dimension `error.type`.
/// - `herald.client.request.retries`: a counter of retries (`taskWillRetry`), with the method and the
///   failed attempt's status class and error type as dimensions.
/// - `herald.client.request.connectivity_waits`: a counter of tasks that waited for a network
///   (`taskIsWaitingForConnectivity`), with the method and the error type as dimensions.
/// - `herald.network.reachable`: a meter, 1 while the last reachability status announced on the center was
///   reachable, 0 while not (`reachabilityDidChange`); and `herald.network.reachability.changes`, a counter
///   of changes with the new status's label (`reachable_via_ethernet`, `not_reachable` …) as dimension.
///
/// Dimensions are bounded, never taken from the URL path: `http.request.method` (unknown methods become
/// `_OTHER`), `http.response.status_class` (`2xx`…`5xx`, absent without a response) and `error.type`
/// (`HeraldError.Code`'s description, absent on success); `server.address` only when
/// ``Configuration/includesServerAddress`` is set. Metric objects are created once per dimension set and
/// cached; at most ``Configuration/maximumDimensionSets`` are made, after which further combinations are
/// recorded under `_OTHER` values.
///
/// It takes the `MetricsFactory` to use and never bootstraps `MetricsSystem`.
public final class MetricsObserver: SessionObserver {
    /// Options.
    public struct Configuration: Sendable {
        /// Adds a `server.address` dimension (the URL's host). Off by default: the host count may be unbounded.
        public var includesServerAddress = false
        /// The most dimension sets created before combinations are folded into `_OTHER`. Default 256.
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

    private struct Instruments: Sendable {
        let duration: Metrics.Timer
        let requestBodySize: Recorder
        let responseBodySize: Recorder
    }

    /// The dimension values of a completion: method, status class, error type and server address, each
    /// empty when absent.
    private struct DimensionValues: Hashable {
        var method: String
        var statusClass: String
        var errorType: String
        var serverAddress: String

        /// The values with every present one replaced by `_OTHER`, for combinations past the limit.
        var folded: DimensionValues {
            func fold(_ value: String) -> String { value.isEmpty ? "" : "_OTHER" }
            return DimensionValues(
                method: fold(method), statusClass: fold(statusClass), errorType: fold(errorType),
                serverAddress: fold(serverAddress))
        }
    }

    /// A task seen resuming and not yet complete.
    private struct TaskRecord {
        /// When it first resumed: the duration of a task that never reached the network counts from here.
        var started: Date
        /// Whether it counts in `http.client.active_requests` now (resumed, not suspended).
        var isRunning: Bool

        /// Marks the task running; `wasRunning` says whether it already was.
        mutating func markRunning(_ wasRunning: inout Bool) {
            wasRunning = isRunning
            isRunning = true
        }
    }

    private struct State {
        var instruments: [DimensionValues: Instruments] = [:]
        /// The dimension set of the last completion and its instruments: consecutive completions mostly share
        /// one, and comparing four short strings costs less than hashing them.
        var lastInstruments: (values: DimensionValues, instruments: Instruments)?
        var tasks: [TaskKey: TaskRecord] = [:]
        var moveFailures: [String: Counter] = [:]
        var retryCounters: [[String]: Counter] = [:]
        var waitCounters: [[String]: Counter] = [:]
        var reachabilityCounters: [String: Counter] = [:]
    }

    private let factory: any MetricsFactory
    private let configuration: Configuration
    private let activeRequests: Meter
    private let state = Locked(State())

    /// Creates a metrics observer.
    /// - Parameters:
    ///   - factory: The metrics backend, such as your application's bootstrapped `MetricsSystem.factory`.
    ///   - configuration: Options; default ``Configuration/init()``.
    public init(factory: any MetricsFactory, configuration: Configuration = Configuration()) {
        self.factory = factory
        self.configuration = configuration
        self.activeRequests = Meter(label: Name.activeRequests, dimensions: [], factory: factory)
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
        let added = state.withLock { state -> Bool in
            // One lookup: the first resume records the start, a later one only counts the task again.
            var wasRunning = true
            state.tasks[key, default: TaskRecord(started: date, isRunning: false)].markRunning(&wasRunning)
            return !wasRunning
        }
        if added { activeRequests.increment() }
    }

    /// Stops counting the task as running.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        let removed = state.withLock { state -> Bool in
            guard state.tasks[key]?.isRunning == true else { return false }
            state.tasks[key]?.isRunning = false
            return true
        }
        if removed { activeRequests.decrement() }
    }

    /// Counts one retry under `herald.client.request.retries`.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let retry = notification.userInfo
        var values = [
            KnownHTTPMethod.bounded(retry.request.method),
            retry.response?.statusClass ?? "", retry.error.code.description,
        ]
        let counter = state.withLock { state -> Counter in
            if let existing = state.retryCounters[values] { return existing }
            if state.retryCounters.count >= configuration.maximumDimensionSets {
                values = values.map { $0.isEmpty ? "" : "_OTHER" }
                if let existing = state.retryCounters[values] { return existing }
            }
            var dimensions = [("http.request.method", values[0]), ("error.type", values[2])]
            if !values[1].isEmpty { dimensions.append(("http.response.status_class", values[1])) }
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
        let values = dimensionValues(for: completion)
        let (record, instruments) = state.withLock { state in
            (state.tasks.removeValue(forKey: key), instrumentsLocked(for: values, in: &state))
        }
        if record?.isRunning == true { activeRequests.decrement() }
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
        let removed = state.withLock { state -> Int in
            let running = state.tasks.lazy.filter { $0.key.sessionIdentifier == session && $0.value.isRunning }.count
            state.tasks = state.tasks.filter { $0.key.sessionIdentifier != session }
            return running
        }
        if removed > 0 { activeRequests.decrement(by: Double(removed)) }
    }

    // MARK: - dimensions

    private func dimensionValues(for completion: TaskCompletion) -> DimensionValues {
        DimensionValues(
            method: KnownHTTPMethod.bounded(completion.request.method),
            statusClass: completion.response?.statusClass ?? "",
            errorType: completion.error?.code.description ?? "",
            serverAddress: configuration.includesServerAddress ? (completion.request.url.host ?? "") : "")
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
        var dimensions = [("http.request.method", values.method)]
        if !values.statusClass.isEmpty { dimensions.append(("http.response.status_class", values.statusClass)) }
        if !values.errorType.isEmpty { dimensions.append(("error.type", values.errorType)) }
        if !values.serverAddress.isEmpty { dimensions.append(("server.address", values.serverAddress)) }
        let instruments = Instruments(
            duration: Metrics.Timer(
                label: Name.requestDuration, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory),
            requestBodySize: Recorder(label: Name.requestBodySize, dimensions: dimensions, factory: factory),
            responseBodySize: Recorder(label: Name.responseBodySize, dimensions: dimensions, factory: factory))
        state.instruments[values] = instruments
        return instruments
    }
}
