import Foundation
import HeraldObservers
import Testing

/// The Prometheus names of the metrics observer's instruments, and the buckets keyed by them.
@Suite("MetricsObserver's Prometheus names")
struct PrometheusNameTests {
    /// Prometheus's metric name syntax.
    static func isValidMetricName(_ name: String) -> Bool {
        name.range(of: "^[a-zA-Z_:][a-zA-Z0-9_:]*$", options: .regularExpression) != nil
    }

    @Test("every instrument has a valid, distinct name with its unit's suffix, counters ending in _total")
    func names() {
        let names = MetricsObserver.instruments.map(\.prometheusName)
        #expect(Set(names).count == names.count)
        for instrument in MetricsObserver.instruments {
            let name = instrument.prometheusName
            #expect(Self.isValidMetricName(name), "\(name)")
            #expect(!name.contains("."))
            #expect(name.hasSuffix("_seconds") == (instrument.unit == "s"), "\(name)")
            #expect(name.hasSuffix("_bytes") == (instrument.unit == "By"), "\(name)")
            #expect(name.hasSuffix("_total") == (instrument.kind == .counter), "\(name)")
        }
        #expect(
            MetricsObserver.instruments.first { $0.name == MetricsObserver.Name.requestDuration }?.prometheusName
                == "http_client_request_duration_seconds")
        #expect(MetricsObserver.prometheusName("9.lives", unit: "{life}", isCounter: false) == "__lives")
        #expect(MetricsObserver.prometheusName("x_bytes", unit: "By", isCounter: true) == "x_bytes_total")
        #expect(MetricsObserver.prometheusLabelName("http.response.status_code") == "http_response_status_code")
    }

    @Test("the sanitizer renames Herald's metrics, drops unit and description, and leaves others alone")
    func sanitizer() {
        let (name, labels) = MetricsObserver.prometheusNameAndLabels(
            MetricsObserver.Name.timeInQueue,
            [("server.address", "example.com"), ("unit", "s"), ("description", "…"), ("url.scheme", "https")])
        #expect(name == "http_client_request_time_in_queue_seconds")
        #expect(labels.map(\.0) == ["server_address", "url_scheme"])
        #expect(labels.map(\.1) == ["example.com", "https"])
        let other = MetricsObserver.prometheusNameAndLabels("my.metric", [("unit", "s")])
        #expect(other.0 == "my.metric")
        #expect(other.1.map(\.0) == ["unit"])
    }

    @Test("the buckets are keyed by the names the sanitizer gives, with the advised boundaries")
    func bucketsFollowTheNames() {
        for instrument in MetricsObserver.instruments {
            let (name, _) = MetricsObserver.prometheusNameAndLabels(instrument.name, [])
            guard let advised = instrument.buckets else {
                #expect(MetricsObserver.prometheusDurationBuckets[name] == nil)
                #expect(MetricsObserver.prometheusValueBuckets[name] == nil)
                continue
            }
            if instrument.unit == "s" {
                let seconds = MetricsObserver.prometheusDurationBuckets[name]?.map {
                    Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18
                }
                #expect(seconds == advised, "\(name)")
                #expect(MetricsObserver.prometheusValueBuckets[name] == nil)
            } else {
                #expect(MetricsObserver.prometheusValueBuckets[name] == advised, "\(name)")
                #expect(MetricsObserver.prometheusDurationBuckets[name] == nil)
            }
        }
        #expect(MetricsObserver.prometheusDurationBuckets.count == 3)
        #expect(MetricsObserver.prometheusDurationBuckets["http_client_connection_duration_seconds"] != nil)
        #expect(MetricsObserver.prometheusValueBuckets.count == 2)
    }
}
