import FleetHarness
import Foundation
import Testing

/// The fleet end to end: service A calls service B through a Herald session observed by HeraldObservers'
/// metrics and tracing observers; a real Prometheus scrapes both, and an OTLP/HTTP receiver decodes what
/// swift-otel exports. Every process listens on 127.0.0.1 only.
@Suite("Fleet", .serialized)
struct FleetTests {
    /// OpenTelemetry's advised boundaries for `http.client.request.duration`, as the test expects to find them.
    static let advisedBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

    /// Runs `body` with a started fleet, stopping it afterwards whatever happened (keeping its logs on failure).
    func withFleet(_ body: (Fleet) async throws -> Void) async throws {
        let fleet = try await Fleet.start()
        do {
            try await body(fleet)
        } catch {
            await fleet.stop(keepingLogs: true)
            Issue.record("logs kept in \(fleet.directory.path)")
            throw error
        }
        await fleet.stop()
    }

    @Test("after N requests through A, Prometheus counts N for A's Herald client, a p99 and the documented labels")
    func prometheusCounts() async throws {
        try await withFleet { fleet in
            let paths =
                Array(repeating: "/work?delay_ms=15", count: 40) + Array(repeating: "/work?status=404", count: 10)
                + Array(repeating: "/work?status=500&delay_ms=30", count: 10)
            let statuses = try await fleet.load(paths, concurrency: 8)
            #expect(statuses == [200: 40, 404: 10, 500: 10])

            let total = try await fleet.waitForQuery(#"sum(http_client_request_duration_count{job="service-a"})"#) {
                $0.first?.value == Double(paths.count)
            }
            #expect(total.first?.value == 60)

            let p99 = try await fleet.query(
                #"histogram_quantile(0.99, sum by (le) (http_client_request_duration_bucket{job="service-a"}))"#)
            let seconds = try #require(p99.first?.value)
            #expect(p99.count == 1)
            #expect(seconds.isFinite && seconds > 0.015 && seconds <= 10, "p99 \(seconds) s")

            let series = try await fleet.query(#"http_client_request_duration_count{job="service-a"}"#)
            let base: Set<String> = [
                "__name__", "job", "instance", "http_request_method", "server_address", "server_port", "url_scheme",
                "http_response_status_code", "network_protocol_version", "herald_response_source",
            ]
            #expect(series.count == 3)
            var counts: [String: Double] = [:]
            for sample in series {
                let status = try #require(sample.labels["http_response_status_code"])
                counts[status] = sample.value
                let expected = status == "200" ? base : base.union(["error_type"])
                #expect(Set(sample.labels.keys) == expected, "\(sample)")
                #expect(sample.labels["http_request_method"] == "GET")
                #expect(sample.labels["server_address"] == "127.0.0.1")
                #expect(sample.labels["server_port"] == fleet.serviceB.port.map(String.init))
                #expect(sample.labels["url_scheme"] == "http")
                #expect(sample.labels["network_protocol_version"] == "1.1")
                #expect(sample.labels["herald_response_source"] == "network")
                #expect(sample.labels["error_type"] == (status == "200" ? nil : status))
            }
            #expect(counts == ["200": 40, "404": 10, "500": 10])

            let buckets = try await fleet.query(
                #"http_client_request_duration_bucket{job="service-a", http_response_status_code="200"}"#)
            let bounds = buckets.compactMap { $0.labels["le"] }
            #expect(bounds.contains("+Inf"))
            #expect(bounds.compactMap(Double.init).filter(\.isFinite).sorted() == Self.advisedBuckets)

            let active = try await fleet.query(#"http_client_active_requests{job="service-a"}"#)
            #expect(active.count == 1)
            #expect(
                Set(active.first?.labels.keys.map { $0 } ?? []) == [
                    "__name__", "job", "instance", "http_request_method", "server_address", "server_port", "url_scheme",
                ])
            #expect(active.first?.value == 0)
        }
    }

    @Test("one request through A → B is one trace: A's server span, Herald's client span under it, B's under that")
    func oneTrace() async throws {
        try await withFleet { fleet in
            let traceID = Self.randomHex(bytes: 16)
            let callerSpanID = Self.randomHex(bytes: 8)
            let status = try await fleet.request("/work", traceParent: "00-\(traceID)-\(callerSpanID)-01")
            #expect(status == 200)

            let spans = try await fleet.waitForTrace(traceID, spans: 3)
            #expect(spans.count == 3, "\(TraceTree.render(spans))")
            let server = try #require(spans.first { $0.service == "service-a" && $0.kind == "SPAN_KIND_SERVER" })
            let client = try #require(spans.first { $0.service == "service-a" && $0.kind == "SPAN_KIND_CLIENT" })
            let downstream = try #require(spans.first { $0.service == "service-b" && $0.kind == "SPAN_KIND_SERVER" })
            #expect(server.parentSpanId == callerSpanID)
            #expect(client.parentSpanId == server.spanId)
            #expect(downstream.parentSpanId == client.spanId)

            #expect(client.name == "GET")
            #expect(client.attributes["http.request.method"] == .string("GET"))
            #expect(client.attributes["server.address"] == .string("127.0.0.1"))
            #expect(client.attributes["server.port"] == .int(Int64(fleet.serviceB.port ?? 0)))
            #expect(client.attributes["url.scheme"] == .string("http"))
            #expect(client.attributes["http.response.status_code"] == .int(200))
            #expect(client.attributes["network.protocol.version"] == .string("1.1"))
            #expect(client.startTimeUnixNano >= server.startTimeUnixNano)
            #expect(client.endTimeUnixNano <= server.endTimeUnixNano)

            // LoggingObserver's line about the task, exported as an OTLP log record inside the client span.
            let completed = try await fleet.waitForLogRecords {
                $0.service == "service-a" && $0.body == .string("task completed") && $0.traceId == traceID
            }
            #expect(completed.count == 1)
            #expect(completed.first?.spanId == client.spanId)
            #expect(completed.first?.attributes["http.response.status_code"] == .string("200"))
        }
    }

    @Test("swift-otel exports A's request duration over OTLP with the advised buckets and the same attributes")
    func otlpMetrics() async throws {
        try await withFleet { fleet in
            #expect(try await fleet.request("/work?status=503") == 503)
            let points = try await fleet.waitForMetricPoints {
                $0.service == "service-a" && $0.name == "http.client.request.duration"
            }
            let point = try #require(points.last)
            #expect(point.kind == "histogram")
            #expect(point.count == 1)
            #expect(point.explicitBounds == Self.advisedBuckets)
            #expect(
                Set(point.attributes.keys) == [
                    "http.request.method", "server.address", "server.port", "url.scheme", "http.response.status_code",
                    "network.protocol.version", "error.type", "herald.response.source",
                ])
            #expect(point.attributes["error.type"] == .string("503"))
            #expect(point.attributes["herald.response.source"] == .string("network"))
        }
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
