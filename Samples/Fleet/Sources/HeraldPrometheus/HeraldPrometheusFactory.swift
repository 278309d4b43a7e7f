import CoreMetrics
import HeraldObservers
import Prometheus

/// swift-prometheus's metrics factory, with Herald's metrics under the names, `# HELP` lines and bucket
/// boundaries an SRE expects: `http_client_request_duration_seconds` with OpenTelemetry's advised buckets,
/// `http_client_response_body_size_bytes` with ``MetricsObserver/advisedBodySizeBuckets``, counters ending in
/// `_total`, and the `unit` and `description` dimensions of ``MetricsObserver/Configuration/describesInstruments``
/// dropped rather than made labels.
///
/// swift-prometheus's own `PrometheusMetricsFactory` writes no `# HELP` line for a metric made through
/// swift-metrics, and looks a histogram's buckets up *after* its `nameAndLabelSanitizer` has renamed it, so
/// renaming there alone silently loses the advised buckets. This factory makes Herald's metrics (and those of
/// `additional`) through the registry's own API, which takes the name, help text and buckets together; every
/// other metric goes to a `PrometheusMetricsFactory` on the same registry, unchanged.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()
/// MetricsSystem.bootstrap(HeraldPrometheusFactory(registry: registry))
/// ```
///
/// It is part of the fleet sample, not of Herald (which does not depend on swift-prometheus): copy this file.
public struct HeraldPrometheusFactory: MetricsFactory {
    /// How one metric is exposed to Prometheus.
    public struct Exposition: Sendable {
        /// The Prometheus name, such as `http_server_request_duration_seconds`.
        public var name: String
        /// The `# HELP` text.
        public var help: String
        /// A histogram's bucket boundaries, in seconds for a timer; `nil` for swift-prometheus's defaults.
        /// Only finite ones are kept: Prometheus adds the `+Inf` bucket itself.
        public var buckets: [Double]? {
            didSet { buckets = buckets?.filter(\.isFinite) }
        }

        /// The name and help text as swift-prometheus's registry takes them (the whole name as the base name,
        /// the unit already in it).
        var descriptor: MetricNameDescriptor {
            MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        }

        /// An exposition.
        /// - Parameters:
        ///   - name: The Prometheus name.
        ///   - help: The `# HELP` text.
        ///   - buckets: A histogram's bucket boundaries (seconds for a timer), or `nil`; `.infinity` and other
        ///     non-finite values are dropped (Prometheus adds `+Inf` itself).
        public init(name: String, help: String, buckets: [Double]? = nil) {
            self.name = name
            self.help = help
            self.buckets = buckets?.filter(\.isFinite)
        }
    }

    /// The registry the metrics live in; render it for `/metrics`.
    public let registry: PrometheusCollectorRegistry
    /// The expositions, by swift-metrics label.
    public let expositions: [String: Exposition]
    private let fallback: PrometheusMetricsFactory

    /// A factory for `registry`.
    /// - Parameters:
    ///   - registry: The registry.
    ///   - additional: Expositions of other metrics, by swift-metrics label, such as Hummingbird's
    ///     `http.server.request.duration`; they take precedence over Herald's.
    public init(registry: PrometheusCollectorRegistry, additional: [String: Exposition] = [:]) {
        var expositions: [String: Exposition] = [:]
        for instrument in MetricsObserver.instruments {
            expositions[instrument.name] = Exposition(
                name: instrument.prometheusName, help: instrument.summary, buckets: instrument.buckets)
        }
        expositions.merge(additional) { _, new in new }
        self.registry = registry
        self.expositions = expositions
        self.fallback = PrometheusMetricsFactory(registry: registry)
    }

    /// The label a Herald metric gets when it has no other: swift-prometheus stops the process when one name is
    /// made both with and without labels (a connection that closes before it has a peer address, then one that
    /// has), so a metric of this factory is never made without any.
    public static let placeholderLabel = (name: "herald_unlabeled", value: "true")

    private static func labels(_ dimensions: [(String, String)]) -> [(String, String)] {
        let labels = dimensions.compactMap { key, value in
            key == "unit" || key == "description" ? nil : (MetricsObserver.prometheusLabelName(key), value)
        }
        return labels.isEmpty ? [placeholderLabel] : labels
    }

    /// A counter; Herald's under its `_total` name with its help text.
    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let exposition = expositions[label] else {
            return fallback.makeCounter(label: label, dimensions: dimensions)
        }
        return registry.makeCounter(descriptor: exposition.descriptor, labels: Self.labels(dimensions))
    }

    /// A floating-point counter; Herald's under its `_total` name with its help text.
    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
        -> any FloatingPointCounterHandler
    {
        guard let exposition = expositions[label] else {
            return fallback.makeFloatingPointCounter(label: label, dimensions: dimensions)
        }
        return registry.makeCounter(descriptor: exposition.descriptor, labels: Self.labels(dimensions))
    }

    /// A histogram when `aggregate` (with the exposition's buckets), else a gauge.
    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard let exposition = expositions[label] else {
            return fallback.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        let labels = Self.labels(dimensions)
        guard aggregate else { return registry.makeGauge(descriptor: exposition.descriptor, labels: labels) }
        return registry.makeValueHistogram(
            descriptor: exposition.descriptor, labels: labels,
            buckets: exposition.buckets ?? fallback.defaultValueHistogramBuckets)
    }

    /// A gauge.
    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        guard let exposition = expositions[label] else {
            return fallback.makeMeter(label: label, dimensions: dimensions)
        }
        return registry.makeGauge(descriptor: exposition.descriptor, labels: Self.labels(dimensions))
    }

    /// A duration histogram, with the exposition's buckets.
    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let exposition = expositions[label] else {
            return fallback.makeTimer(label: label, dimensions: dimensions)
        }
        let buckets =
            // Finite (see Exposition.buckets), and within what a Duration of nanoseconds holds (292 years).
            exposition.buckets?.map { Duration.nanoseconds(Int64(min(max(($0 * 1e9).rounded(), -9.2e18), 9.2e18))) }
            ?? fallback.defaultDurationHistogramBuckets
        return registry.makeDurationHistogram(
            descriptor: exposition.descriptor, labels: Self.labels(dimensions), buckets: buckets)
    }

    /// Unregisters a counter.
    public func destroyCounter(_ handler: any CounterHandler) { fallback.destroyCounter(handler) }
    /// Unregisters a floating-point counter.
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        fallback.destroyFloatingPointCounter(handler)
    }
    /// Unregisters a recorder.
    public func destroyRecorder(_ handler: any RecorderHandler) { fallback.destroyRecorder(handler) }
    /// Unregisters a meter.
    public func destroyMeter(_ handler: any MeterHandler) { fallback.destroyMeter(handler) }
    /// Unregisters a timer.
    public func destroyTimer(_ handler: any TimerHandler) { fallback.destroyTimer(handler) }
}
