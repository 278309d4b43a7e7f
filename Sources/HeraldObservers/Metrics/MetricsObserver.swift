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
    }

    private struct Instruments: Sendable {
        let duration: Metrics.Timer
        let requestBodySize: Recorder
        let responseBodySize: Recorder
    }

    private struct State {
        var instruments: [[String]: Instruments] = [:]
        var running: Set<TaskKey> = []
        var started: [TaskKey: Date] = [:]
        var moveFailures: [String: Counter] = [:]
        var retryCounters: [[String]: Counter] = [:]
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
    }

    /// Counts the task as running.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        let date = notification.userInfo.date
        let added = state.withLock { state -> Bool in
            if state.started[key] == nil { state.started[key] = date }
            return state.running.insert(key).inserted
        }
        if added { activeRequests.increment() }
    }

    /// Stops counting the task as running.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        if state.withLock({ $0.running.remove(key) }) != nil { activeRequests.decrement() }
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
        let completion = notification.userInfo
        let key = TaskKey(completion)
        let dimensions = dimensions(for: completion)
        let (wasRunning, started, instruments) = state.withLock { state in
            let wasRunning = state.running.remove(key) != nil
            let started = state.started.removeValue(forKey: key)
            return (wasRunning, started, instrumentsLocked(for: dimensions, in: &state))
        }
        if wasRunning { activeRequests.decrement() }
        // A task that never resumed (cancelled while suspended) made no request: nothing to time.
        guard completion.metrics != nil || started != nil else { return }
        let seconds = completion.metrics?.total ?? started.map { completion.date.timeIntervalSince($0) } ?? 0
        instruments.duration.recordNanoseconds(Int64(max(0, seconds) * 1_000_000_000))
        if let metrics = completion.metrics {
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
            let before = state.running.count
            state.running = state.running.filter { $0.sessionIdentifier != session }
            state.started = state.started.filter { $0.key.sessionIdentifier != session }
            return before - state.running.count
        }
        if removed > 0 { activeRequests.decrement(by: Double(removed)) }
    }

    // MARK: - dimensions

    private func dimensions(for completion: TaskCompletion) -> [String] {
        [
            KnownHTTPMethod.bounded(completion.request.method),
            completion.response?.statusClass ?? "",
            completion.error?.code.description ?? "",
            configuration.includesServerAddress ? (completion.request.url.host ?? "") : "",
        ]
    }

    /// The cached instruments for a dimension set, created on first use. Called with the lock held:
    /// creating a metric calls only the factory, never user code, and doing it under the lock is what
    /// guarantees each one is created exactly once.
    private func instrumentsLocked(for values: [String], in state: inout State) -> Instruments {
        if let existing = state.instruments[values] { return existing }
        var values = values
        if state.instruments.count >= configuration.maximumDimensionSets {
            values = values.map { $0.isEmpty ? "" : "_OTHER" }
            if let existing = state.instruments[values] { return existing }
        }
        var dimensions = [("http.request.method", values[0])]
        if !values[1].isEmpty { dimensions.append(("http.response.status_class", values[1])) }
        if !values[2].isEmpty { dimensions.append(("error.type", values[2])) }
        if !values[3].isEmpty { dimensions.append(("server.address", values[3])) }
        let instruments = Instruments(
            duration: Metrics.Timer(
                label: Name.requestDuration, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory),
            requestBodySize: Recorder(label: Name.requestBodySize, dimensions: dimensions, factory: factory),
            responseBodySize: Recorder(label: Name.responseBodySize, dimensions: dimensions, factory: factory))
        state.instruments[values] = instruments
        return instruments
    }
}
