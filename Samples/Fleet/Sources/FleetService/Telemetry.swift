import Foundation
import HeraldObservers
import HeraldPrometheus
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

    /// Removes every `OTEL_*` variable from this process's environment, saying so on standard error, one line
    /// each. swift-otel reads them over the configuration ``bootstrap(resource:otlpEndpoint:)`` makes: an
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` would silently replace `--otlp`, and values it does not support (such as
    /// `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`, `OTEL_PROPAGATORS=b3` or `OTEL_TRACES_SAMPLER=jaeger_remote`) stop the
    /// process. The fleet's services are configured by their command line alone.
    static func ignoreOTelEnvironment(service: String) {
        let names = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("OTEL_") }.sorted()
        for name in names {
            unsetenv(name)
            try? FileHandle.standardError.write(
                contentsOf: Data(
                    "fleet-service \(service): ignoring \(name): the command line configures telemetry\n".utf8))
        }
    }

    /// Bootstraps swift-log, swift-metrics and the instrumentation system for this process, and returns the
    /// telemetry with the tracer Herald's tracing observer uses.
    /// - Parameters:
    ///   - resource: The service's OpenTelemetry resource: `service.name`, `service.version` and
    ///     `service.instance.id`, on every span, metric point and log record it exports, and as the labels of
    ///     `target_info` on `/metrics`.
    ///   - otlpEndpoint: The OTLP/HTTP receiver's base URL.
    static func bootstrap(resource: ServiceResource, otlpEndpoint: URL) throws -> (Telemetry, some Tracer) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = resource.name
        configuration.resourceAttributes["service.version"] = resource.version
        configuration.resourceAttributes["service.instance.id"] = resource.instanceID
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

        // swift-metrics leaves histogram buckets to the backend. swift-otel keeps OpenTelemetry's names, so its
        // buckets are keyed by them: OpenTelemetry's advice for the durations, Herald's for the body sizes.
        let seconds = { (buckets: [Double]) in buckets.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) } }
        configuration.metrics.durationHistogramBuckets["http.server.request.duration"] =
            seconds(MetricsObserver.advisedDurationBuckets)
        for (name, buckets) in MetricsObserver.advisedBuckets {
            if MetricsObserver.instruments.first(where: { $0.name == name })?.unit == "s" {
                configuration.metrics.durationHistogramBuckets[name] = seconds(buckets)
            } else {
                configuration.metrics.valueHistogramBuckets[name] = buckets
            }
        }

        // Prometheus: Herald's metrics under Prometheus's names (`http_client_request_duration_seconds`, …)
        // with HELP text and the same buckets, and Hummingbird's server duration likewise.
        let registry = PrometheusCollectorRegistry()
        let prometheus = HeraldPrometheusFactory(
            registry: registry,
            additional: [
                "http.server.request.duration": .init(
                    name: "http_server_request_duration_seconds", help: "Duration of HTTP server requests.",
                    buckets: MetricsObserver.advisedDurationBuckets)
            ])
        // OpenTelemetry's Prometheus convention for the resource: one `target_info` series, value 1.
        registry.makeGauge(
            descriptor: MetricNameDescriptor(metricName: "target_info", unitName: "", helpText: "Target metadata"),
            labels: [
                ("service_name", resource.name), ("service_version", resource.version),
                ("service_instance_id", resource.instanceID),
            ]
        ).set(to: 1)

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

/// A service's OpenTelemetry resource attributes.
struct ServiceResource {
    /// `service.name`: the service's name, also its job's name in Prometheus.
    var name: String
    /// `service.version`: the build's version.
    var version: String
    /// `service.instance.id`: unique to this process (a random UUID unless given), so that two replicas of
    /// one service, or one service before and after a restart, are told apart.
    var instanceID: String
}
