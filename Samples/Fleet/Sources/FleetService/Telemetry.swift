import Foundation
import HeraldObservers
import Logging
import Metrics
import OTel
import Prometheus
import ServiceLifecycle
import Tracing

/// One service's telemetry: swift-otel's logs, metrics and traces exported over OTLP/HTTP, and the same
/// metrics kept in a Prometheus registry for `/metrics`.
struct Telemetry {
    /// The registry `/metrics` renders.
    let registry: PrometheusCollectorRegistry
    /// The background services that export (they flush on graceful shutdown).
    let services: [any Service]

    /// Bootstraps swift-log, swift-metrics and the instrumentation system for this process, and returns the
    /// telemetry with the tracer Herald's tracing observer uses.
    static func bootstrap(serviceName: String, otlpEndpoint: URL) throws -> (Telemetry, some Tracer) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.diagnosticLogLevel = .warning
        for signal in ["traces", "metrics", "logs"] {
            var exporter = OTel.Configuration.OTLPExporterConfiguration.default
            exporter.protocol = .httpProtobuf
            exporter.endpoint = otlpEndpoint.appending(path: "v1/\(signal)").absoluteString
            switch signal {
            case "traces": configuration.traces.otlpExporter = exporter
            case "metrics": configuration.metrics.otlpExporter = exporter
            default: configuration.logs.otlpExporter = exporter
            }
        }
        // Short export delays: the fleet's tests wait for what was exported, and a demo runs for seconds.
        configuration.traces.batchSpanProcessor.scheduleDelay = .milliseconds(200)
        configuration.metrics.exportInterval = .seconds(1)
        configuration.logs.batchLogRecordProcessor.scheduleDelay = .milliseconds(200)
        configuration.logs.level = .debug

        // swift-metrics leaves histogram buckets to the backend: both get one layout per histogram, OpenTelemetry's
        // advice for the durations and Herald's for the body sizes.
        let advised = MetricsObserver.advisedDurationBuckets.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
        configuration.metrics.durationHistogramBuckets["http.server.request.duration"] = advised
        let registry = PrometheusCollectorRegistry()
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.durationHistogramBuckets["http.server.request.duration"] = advised
        for (name, buckets) in MetricsObserver.advisedBuckets {
            if MetricsObserver.instruments.first(where: { $0.name == name })?.unit == "s" {
                let durations = buckets.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
                configuration.metrics.durationHistogramBuckets[name] = durations
                prometheus.durationHistogramBuckets[name] = durations
            } else {
                configuration.metrics.valueHistogramBuckets[name] = buckets
                prometheus.valueHistogramBuckets[name] = buckets
            }
        }

        let tracing = try OTel.makeTracingBackend(configuration: configuration)
        let metrics = try OTel.makeMetricsBackend(configuration: configuration)
        let logs = try OTel.makeLoggingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracing.factory)
        MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [prometheus, metrics.factory]))
        let otelLogs = logs.factory
        LoggingSystem.bootstrap { label in
            var console = StreamLogHandler.standardError(label: label)
            console.logLevel = .warning
            return MultiplexLogHandler([otelLogs(label), console])
        }
        let telemetry = Telemetry(registry: registry, services: [tracing.service, metrics.service, logs.service])
        return (telemetry, tracing.factory)
    }
}
