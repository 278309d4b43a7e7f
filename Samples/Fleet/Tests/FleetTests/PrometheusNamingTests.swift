import CoreMetrics
import Foundation
import HeraldObservers
import HeraldPrometheus
import Prometheus
import Testing

/// Herald's metrics through swift-prometheus, in a registry of the test's own (no processes): the names,
/// HELP lines and buckets, and the trap they avoid.
@Suite("Prometheus naming")
struct PrometheusNamingTests {
    static let durationDimensions = [
        ("http.request.method", "GET"), ("server.address", "127.0.0.1"), ("server.port", "8080"),
        ("url.scheme", "http"), ("http.response.status_code", "200"), ("network.protocol.version", "1.1"),
        ("herald.response.source", "network"), ("unit", "s"), ("description", "Duration of HTTP client requests."),
    ]

    /// The finite `le` boundaries of histogram `name` in `text`.
    static func bounds(of name: String, in text: String) -> [Double] {
        var bounds: Set<Double> = []
        for line in text.split(separator: "\n") where line.hasPrefix(name + "_bucket{") {
            guard let start = line.range(of: #"le=""#)?.upperBound, let end = line[start...].firstIndex(of: "\""),
                let bound = Double(line[start..<end]), bound.isFinite
            else { continue }
            bounds.insert(bound)
        }
        return bounds.sorted()
    }

    @Test("the Prometheus names: units as suffixes, counters with _total, labels without dots")
    func names() {
        let names = Dictionary(uniqueKeysWithValues: MetricsObserver.instruments.map { ($0.name, $0.prometheusName) })
        #expect(
            names == [
                "http.client.request.duration": "http_client_request_duration_seconds",
                "http.client.request.time_in_queue": "http_client_request_time_in_queue_seconds",
                "http.client.active_requests": "http_client_active_requests",
                "http.client.open_connections": "http_client_open_connections",
                "http.client.connection.duration": "http_client_connection_duration_seconds",
                "http.client.request.body.size": "http_client_request_body_size_bytes",
                "http.client.response.body.size": "http_client_response_body_size_bytes",
                "herald.client.request.retries": "herald_client_request_retries_total",
                "herald.client.request.connectivity_waits": "herald_client_request_connectivity_waits_total",
                "herald.download.move_failures": "herald_download_move_failures_total",
                "herald.network.reachable": "herald_network_reachable",
                "herald.network.reachability.changes": "herald_network_reachability_changes_total",
            ])
        #expect(
            MetricsObserver.prometheusName("1st.try-count", unit: "ms", isCounter: true)
                == "_st_try_count_milliseconds_total")
        #expect(MetricsObserver.prometheusName("a_seconds", unit: "s", isCounter: false) == "a_seconds")
        let (name, labels) = MetricsObserver.prometheusNameAndLabels(
            "http.client.request.duration", Self.durationDimensions)
        #expect(name == "http_client_request_duration_seconds")
        #expect(
            labels.map(\.0) == [
                "http_request_method", "server_address", "server_port", "url_scheme", "http_response_status_code",
                "network_protocol_version", "herald_response_source",
            ])
        let other = MetricsObserver.prometheusNameAndLabels("hb.requests", [("unit", "x")])
        #expect(other.0 == "hb.requests" && other.1.map(\.0) == ["unit"])
    }

    @Test("swift-prometheus looks buckets up after renaming: keyed by the OpenTelemetry name they are lost")
    func bucketsFollowTheRename() {
        let advised = MetricsObserver.advisedDurationBuckets
        let seconds = advised.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }

        // The naive rename: buckets under the OpenTelemetry name, which the factory no longer asks for.
        let naive = PrometheusCollectorRegistry()
        var naiveFactory = PrometheusMetricsFactory(registry: naive)
        naiveFactory.nameAndLabelSanitizer = MetricsObserver.prometheusNameAndLabels
        naiveFactory.durationHistogramBuckets = ["http.client.request.duration": seconds]
        CoreMetrics.Timer(
            label: "http.client.request.duration", dimensions: Self.durationDimensions, factory: naiveFactory
        )
        .recordSeconds(0.3)
        let naiveBounds = Self.bounds(of: "http_client_request_duration_seconds", in: naive.emitToString())
        #expect(!naiveBounds.isEmpty && naiveBounds != advised, "\(naiveBounds)")

        // Keyed by the Prometheus names: kept.
        // As the "Prometheus names" article shows it, with swift-prometheus's own factory.
        let registry = PrometheusCollectorRegistry()
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.nameAndLabelSanitizer = MetricsObserver.prometheusNameAndLabels
        prometheus.durationHistogramBuckets = MetricsObserver.prometheusDurationBuckets  // keyed by the new names
        prometheus.valueHistogramBuckets = MetricsObserver.prometheusValueBuckets
        CoreMetrics.Timer(
            label: "http.client.request.duration", dimensions: Self.durationDimensions, factory: prometheus
        )
        .recordSeconds(0.3)
        Recorder(label: "http.client.response.body.size", dimensions: [("url.scheme", "http")], factory: prometheus)
            .record(5000)
        let text = registry.emitToString()
        #expect(Self.bounds(of: "http_client_request_duration_seconds", in: text) == advised)
        #expect(
            Self.bounds(of: "http_client_response_body_size_bytes", in: text) == MetricsObserver.advisedBodySizeBuckets)
        #expect(!text.contains("unit=\""))
    }

    @Test("the article's one configuration: Herald's duration under its Prometheus name, with HELP and buckets")
    func oneConfiguration() {
        // A test can't bootstrap the process-wide metrics system, so it hands the factory over itself.
        let registry = PrometheusCollectorRegistry()
        // doc-line: MetricsSystem.bootstrap(HeraldPrometheusFactory(registry: registry))
        let factory = HeraldPrometheusFactory(registry: registry)
        // `/metrics` answers with registry.emitToString().
        CoreMetrics.Timer(label: "http.client.request.duration", dimensions: Self.durationDimensions, factory: factory)
            .recordSeconds(0.3)
        let text = registry.emitToString()
        #expect(text.contains("# HELP http_client_request_duration_seconds Duration of HTTP client requests."))
        #expect(
            Self.bounds(of: "http_client_request_duration_seconds", in: text) == MetricsObserver.advisedDurationBuckets)
    }

    @Test("HeraldPrometheusFactory: HELP and TYPE lines, the Prometheus names, the advised buckets")
    func factory() {
        let registry = PrometheusCollectorRegistry()
        let factory = HeraldPrometheusFactory(
            registry: registry,
            additional: [
                "http.server.request.duration": .init(
                    name: "http_server_request_duration_seconds", help: "Duration of HTTP server requests.",
                    buckets: MetricsObserver.advisedDurationBuckets)
            ])
        CoreMetrics.Timer(label: "http.client.request.duration", dimensions: Self.durationDimensions, factory: factory)
            .recordSeconds(0.3)
        CoreMetrics.Timer(label: "http.client.request.duration", dimensions: Self.durationDimensions, factory: factory)
            .recordSeconds(0.007)
        CoreMetrics.Timer(
            label: "http.server.request.duration", dimensions: [("http.route", "/work")], factory: factory
        )
        .recordSeconds(0.2)
        Counter(label: "herald.client.request.retries", dimensions: [("http.request.method", "GET")], factory: factory)
            .increment()
        Meter(label: "http.client.active_requests", dimensions: [("url.scheme", "http")], factory: factory).increment()
        Counter(label: "hb.requests", dimensions: [("http.route", "/work")], factory: factory).increment()
        let text = registry.emitToString()
        let lines = Set(text.split(separator: "\n").map(String.init))

        #expect(lines.contains("# HELP http_client_request_duration_seconds Duration of HTTP client requests."))
        #expect(lines.contains("# TYPE http_client_request_duration_seconds histogram"))
        #expect(lines.contains("# HELP http_server_request_duration_seconds Duration of HTTP server requests."))
        #expect(lines.contains("# HELP herald_client_request_retries_total Retries of HTTP client requests."))
        #expect(lines.contains("# TYPE herald_client_request_retries_total counter"))
        #expect(lines.contains(#"herald_client_request_retries_total{http_request_method="GET"} 1"#))
        #expect(lines.contains("# TYPE http_client_active_requests gauge"))
        #expect(lines.contains(#"http_client_active_requests{url_scheme="http"} 1.0"#), "\(text)")
        // Any other metric as swift-prometheus makes it: no HELP line, its name's dots made underscores.
        #expect(lines.contains("# TYPE hb_requests counter"))
        #expect(!text.contains("# HELP hb_requests"))

        let advised = MetricsObserver.advisedDurationBuckets
        #expect(Self.bounds(of: "http_client_request_duration_seconds", in: text) == advised)
        #expect(Self.bounds(of: "http_server_request_duration_seconds", in: text) == advised)
        #expect(!text.contains("unit=\"") && !text.contains("description=\""))
        // Both observations in one series: 7 ms below the 0.01 bucket, 0.3 s below 0.5 and not below 0.25.
        let series =
            #"http_request_method="GET",server_address="127.0.0.1",server_port="8080",url_scheme="http",http_response_status_code="200",network_protocol_version="1.1",herald_response_source="network""#
        #expect(lines.contains("http_client_request_duration_seconds_bucket{\(series),le=\"0.01\"} 1"), "\(text)")
        #expect(lines.contains("http_client_request_duration_seconds_bucket{\(series),le=\"0.25\"} 1"))
        #expect(lines.contains("http_client_request_duration_seconds_bucket{\(series),le=\"0.5\"} 2"))
        #expect(lines.contains("http_client_request_duration_seconds_count{\(series)} 2"))
    }

    @Test("an exposition's .infinity and NaN boundaries are dropped (Prometheus adds +Inf itself), not a trap")
    func infiniteBoundaries() {
        let registry = PrometheusCollectorRegistry()
        let exposition = HeraldPrometheusFactory.Exposition(
            name: "work_duration_seconds", help: "Duration of work.", buckets: [0.1, 1, .infinity, .nan])
        #expect(exposition.buckets == [0.1, 1])
        let factory = HeraldPrometheusFactory(registry: registry, additional: ["work.duration": exposition])
        CoreMetrics.Timer(label: "work.duration", dimensions: [], factory: factory).recordSeconds(0.5)
        let text = registry.emitToString()
        #expect(Self.bounds(of: "work_duration_seconds", in: text) == [0.1, 1])
        // No dimensions: the placeholder label (see HeraldPrometheusFactory.placeholderLabel).
        #expect(text.contains(#"work_duration_seconds_bucket{herald_unlabeled="true",le="+Inf"} 1"#), "\(text)")
    }

    @Test("a Herald metric made first without labels, then with them, is one family of two series")
    func unlabeledThenLabeled() throws {
        let registry = PrometheusCollectorRegistry()
        let factory = HeraldPrometheusFactory(
            registry: registry, additional: ["work.count": .init(name: "work_total", help: "Work done.")])
        let describing = [("unit", "s"), ("description", "Duration of HTTP client connections.")]
        // A connection closed with neither a peer address nor a protocol version, then one with a peer address.
        factory.makeTimer(label: "http.client.connection.duration", dimensions: describing)
            .recordNanoseconds(1_000_000)
        factory.makeTimer(
            label: "http.client.connection.duration", dimensions: [("network.peer.address", "127.0.0.1")] + describing
        ).recordNanoseconds(2_000_000)
        // And the other way round, for a counter.
        factory.makeCounter(label: "work.count", dimensions: [("status", "200")]).increment(by: 1)
        factory.makeCounter(label: "work.count", dimensions: []).increment(by: 1)
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let counts = text.split(separator: "\n").filter {
            $0.hasPrefix("http_client_connection_duration_seconds_count{")
        }
        #expect(counts.count == 2, "\(text)")
        #expect(counts.contains { $0.contains(#"herald_unlabeled="true""#) }, "\(text)")
        #expect(counts.contains { $0.contains(#"network_peer_address="127.0.0.1""#) }, "\(text)")
        #expect(!counts.contains { $0.contains("herald_unlabeled") && $0.contains("network_peer_address") }, "\(text)")
        #expect(text.contains(#"work_total{status="200"} 1"#), "\(text)")
        #expect(text.contains(#"work_total{herald_unlabeled="true"} 1"#), "\(text)")
    }
}
