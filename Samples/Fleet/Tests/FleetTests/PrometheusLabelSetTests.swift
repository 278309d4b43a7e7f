import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldPrometheus
import Prometheus
import Testing

/// No trap on anything a caller controls, through the library's Prometheus sanitizer
/// (`MetricsObserver.prometheusNameAndLabels`, the "Prometheus names" article's three settings).
@Suite("Prometheus label sets through the library's sanitizer")
struct PrometheusLabelSetTests {
    /// `connectionDidChangeState` for a connection that closed, with or without a peer address.
    static func closed(_ id: Int, peer: String?) -> TypedNotification<ConnectionStateChange> {
        TypedNotification(
            name: .connectionDidChangeState, object: nil,
            userInfo: ConnectionStateChange(
                sessionIdentifier: 1, connectionIdentifier: id, state: .closed, previousState: .idle, scheme: "http",
                host: "127.0.0.1", port: 8080, peerAddress: peer, peerPort: peer == nil ? nil : 8080,
                protocolVersion: nil, age: 0.5, activeConnections: 0, idleConnections: 0, date: Date()))
    }

    /// The article's configuration, a MetricsObserver without `server.address`: a connection closed with no
    /// peer address, then one with.
    static func articleScenario() -> String {
        let registry = PrometheusCollectorRegistry()
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.nameAndLabelSanitizer = MetricsObserver.prometheusNameAndLabels
        prometheus.durationHistogramBuckets = MetricsObserver.prometheusDurationBuckets
        prometheus.valueHistogramBuckets = MetricsObserver.prometheusValueBuckets
        var configuration = MetricsObserver.Configuration()
        configuration.includesServerAddress = false
        let observer = MetricsObserver(factory: prometheus, configuration: configuration)
        observer.connectionDidChangeState(closed(1, peer: nil))
        observer.connectionDidChangeState(closed(2, peer: "127.0.0.1"))
        return registry.emitToString()
    }

    @Test(
        "the sanitizer with includesServerAddress off: a connection without a peer, then one with: no trap, two series")
    func unlabeledThenLabeledThroughTheSanitizer() async {
        await #expect(processExitsWith: .success) {
            let text = PrometheusLabelSetTests.articleScenario()
            let counts = text.split(separator: "\n").filter {
                $0.hasPrefix("http_client_connection_duration_seconds_count{")
            }
            if counts.count != 2 { exit(3) }
        }
    }
}
