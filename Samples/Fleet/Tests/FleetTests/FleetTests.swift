import FleetHarness
import Foundation
import Herald
import Testing

/// The fleet end to end: service A calls service B through a Herald session observed by HeraldObservers'
/// metrics and tracing observers; a real Prometheus scrapes both, and an OTLP/HTTP receiver decodes what
/// swift-otel exports. Every process listens on 127.0.0.1 only.
@Suite("Fleet", .serialized)
struct FleetTests {
    /// OpenTelemetry's advised boundaries for `http.client.request.duration`, as the test expects to find them.
    static let advisedBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

    /// ``MetricsObserver.advisedBodySizeBuckets``, as the test expects to find them.
    static let advisedSizeBuckets: [Double] = [
        0, 64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864, 268_435_456,
        1_073_741_824,
    ]

    /// The finite `le` boundaries of histogram `name` in a `/metrics` page, sorted and without repeats.
    static func bounds(of name: String, in lines: [String]) -> [Double] {
        let prefix = name + "_bucket{"
        var bounds: Set<Double> = []
        for line in lines where line.hasPrefix(prefix) {
            guard let start = line.range(of: #"le=""#)?.upperBound,
                let end = line[start...].firstIndex(of: "\""), let bound = Double(line[start..<end]), bound.isFinite
            else { continue }
            bounds.insert(bound)
        }
        return bounds.sorted()
    }

    @Test("after N requests through A, Prometheus counts N for A's Herald client, a p99 and the documented labels")
    func prometheusCounts() async throws {
        try await withFleet { fleet in
            let paths =
                Array(repeating: "/work?delay_ms=15", count: 40) + Array(repeating: "/work?status=404", count: 10)
                + Array(repeating: "/work?status=500&delay_ms=30", count: 10)
            let statuses = try await fleet.load(paths, concurrency: 8)
            #expect(statuses == [200: 40, 404: 10, 500: 10])

            let total = try await fleet.waitForQuery(
                #"sum(http_client_request_duration_seconds_count{job="service-a"})"#
            ) {
                $0.first?.value == Double(paths.count)
            }
            #expect(total.first?.value == 60)

            let p99 = try await fleet.query(
                #"histogram_quantile(0.99, sum by (le) (http_client_request_duration_seconds_bucket{job="service-a"}))"#
            )
            let seconds = try #require(p99.first?.value)
            #expect(p99.count == 1)
            #expect(seconds.isFinite && seconds > 0.015 && seconds <= 10, "p99 \(seconds) s")

            let series = try await fleet.query(#"http_client_request_duration_seconds_count{job="service-a"}"#)
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
                #"http_client_request_duration_seconds_bucket{job="service-a", http_response_status_code="200"}"#)
            let bounds = buckets.compactMap { $0.labels["le"] }
            #expect(bounds.contains("+Inf"))
            #expect(bounds.compactMap(Double.init).filter(\.isFinite).sorted() == Self.advisedBuckets)

            // The page Prometheus scraped: HELP and TYPE lines, the unit in the name, the advised buckets, and
            // no `unit` or `description` label (describesInstruments is on for swift-otel's sake).
            let page = try await fleet.scrape(fleet.serviceA)
            let lines = page.split(separator: "\n").map(String.init)
            for (name, help) in [
                ("http_client_request_duration_seconds", "Duration of HTTP client requests."),
                (
                    "http_client_request_time_in_queue_seconds",
                    "The amount of time requests spent on a queue waiting for an available connection."
                ),
                ("http_client_request_body_size_bytes", "Size of HTTP client request bodies."),
                ("http_client_response_body_size_bytes", "Size of HTTP client response bodies."),
            ] {
                #expect(lines.contains("# HELP \(name) \(help)"), "\(name)")
                #expect(lines.contains("# TYPE \(name) histogram"), "\(name)")
                let expected = name.hasSuffix("_seconds") ? Self.advisedBuckets : Self.advisedSizeBuckets
                #expect(Self.bounds(of: name, in: lines) == expected, "\(name)")
            }
            #expect(lines.contains("# HELP http_client_active_requests Number of active HTTP requests."))
            #expect(lines.contains("# TYPE http_client_active_requests gauge"))
            #expect(
                lines.contains(
                    "# HELP http_client_open_connections Number of outbound HTTP connections that are currently "
                        + "active or idle on the client."))
            #expect(!page.contains("http_client_request_duration_bucket"))
            #expect(!page.contains("unit=\""))
            #expect(!page.contains("description=\""))

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
            // The resource: name, version and an instance id of its own for each process.
            for span in spans {
                #expect(span.resource["service.name"] == .string(span.service))
                #expect(span.resource["service.version"] == .string(HeraldVersion.string))
            }
            let instanceA = try #require(client.resource["service.instance.id"])
            let instanceB = try #require(downstream.resource["service.instance.id"])
            #expect(server.resource["service.instance.id"] == instanceA)
            #expect(instanceA != instanceB)
            #expect(UUID(uuidString: instanceA.description) != nil, "\(instanceA)")
            // The same resource on /metrics, as OpenTelemetry's `target_info` convention has it.
            let info = try await fleet.query(#"target_info{job="service-a"}"#)
            #expect(info.count == 1)
            #expect(info.first?.labels["service_version"] == HeraldVersion.string)
            #expect(info.first?.labels["service_instance_id"] == instanceA.description)

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
            // describesInstruments: the unit reaches OTLP as the instrument's unit, not as an attribute.
            #expect(point.unit == "s")
            #expect(point.resource["service.version"] == .string(HeraldVersion.string))
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

    /// Sixteen concurrent requests through A, whose Herald session has six connections to B, and B holds each
    /// response 200 ms: each burst goes out in three waves (6, 6, 4), so a request waits 0, 200 or 400 ms for
    /// a connection. The fixed hold makes the waiting dominate whatever else a loaded machine adds, and puts
    /// each group of times well inside one advised bucket (B's in 0.1…0.25 s, the longest waits in 0.25…0.5 s,
    /// A's longest requests in 0.5…0.75 s), at least 100 ms from either edge except B's (50 ms above), so that
    /// the bucket-interpolated p99s are stable from run to run.
    ///
    /// A process the loaded machine stalls for a few hundred milliseconds moves a whole wave into other buckets
    /// (seen here once in about ten runs beside other builds). Such a round is recognised by what the test controls —
    /// a burst longer than 0.75 s (three holds and 150 ms), or a response B held longer than 0.25 s — and
    /// measured again on a new fleet, three rounds at most; a Herald that made the waves longer (fewer
    /// connections, or slower ones) fails all three.
    @Test("A's client p99 minus B's server p99 is the connection-wait p99 (within 20%), and spans carry timings")
    func connectionWaitAccountsForTheGap() async throws {
        var stalls: [String] = []
        for round in 1...3 {
            var measured = false
            try await withFleet { fleet in
                if let stall = try await measureConnectionWait(fleet) {
                    print("connection wait, round \(round) not measured: \(stall)")
                    stalls.append(stall)
                } else {
                    measured = true
                }
            }
            if measured { return }
        }
        Issue.record("every round stalled, so the connection wait was never measured: \(stalls)")
    }

    /// One round of ``connectionWaitAccountsForTheGap()``: `nil` once measured and checked, or why the machine
    /// kept the round from measuring what it means to.
    func measureConnectionWait(_ fleet: Fleet) async throws -> String? {
        let bursts = 8
        let perBurst = 16
        for _ in 0..<bursts {
            let started = ContinuousClock.now
            let statuses = try await fleet.load(
                Array(repeating: "/work?delay_ms=200", count: perBurst), concurrency: perBurst)
            let took = ContinuousClock.now - started
            #expect(statuses == [200: perBurst])
            if took > .milliseconds(750) { return "a burst of \(perBurst) took \(took)" }
        }
        let total = Double(bursts * perBurst)
        let client = #"job="service-a""#
        let server = #"job="service-b", http_route="/work""#
        for counted in [
            "sum(http_client_request_duration_seconds_count{\(client)})",
            "sum(http_client_request_time_in_queue_seconds_count{\(client)})",
            "sum(http_server_request_duration_seconds_count{\(server)})",
        ] {
            _ = try await fleet.waitForQuery(counted) { $0.first?.value == total }
        }
        // The pool the wait was for, in plain sight: at most six connections to B, none active between bursts.
        let pool = try await fleet.waitForQuery(
            "sum by (http_connection_state) (http_client_open_connections{\(client)})"
        ) { samples in samples.contains { $0.labels["http_connection_state"] == "idle" } }
        let idle = pool.first { $0.labels["http_connection_state"] == "idle" }?.value ?? 0
        #expect(idle >= 1 && idle <= 6, "idle connections: \(pool)")
        #expect((pool.first { $0.labels["http_connection_state"] == "active" }?.value ?? 0) == 0, "\(pool)")
        let held = try await fleet.query("sum(http_server_request_duration_seconds_bucket{\(server), le=\"0.25\"})")
        if held.first?.value != total {
            return "B held \(total - (held.first?.value ?? 0)) of \(Int(total)) responses longer than 0.25 s"
        }
        func p99(_ metric: String, _ selector: String) async throws -> Double {
            let answer = try await fleet.query("histogram_quantile(0.99, sum by (le) (\(metric)_bucket{\(selector)}))")
            return try #require(answer.first?.value)
        }
        let clientP99 = try await p99("http_client_request_duration_seconds", client)
        let serverP99 = try await p99("http_server_request_duration_seconds", server)
        let queueP99 = try await p99("http_client_request_time_in_queue_seconds", client)
        let gap = clientP99 - serverP99
        let numbers = "client p99 \(clientP99) s, server p99 \(serverP99) s, gap \(gap) s, queue p99 \(queueP99) s"
        print("connection wait, \(Int(total)) requests: \(numbers)")
        #expect(serverP99 >= 0.2 && serverP99 <= 0.25, "\(numbers)")
        #expect(gap >= 0.25, "the queueing must dominate: \(numbers)")
        #expect(abs(queueP99 - gap) <= 0.2 * gap, "\(numbers)")

        // Every client span of A carries the connection's timings; TLS none (plain HTTP to B).
        let spans: [ExportedSpan] = try await fleet.waitForSpans(seconds: 30) { spans in
            spans.filter { $0.service == "service-a" && $0.kind == "SPAN_KIND_CLIENT" }.count >= Int(total)
        }
        let clientSpans = spans.filter { $0.service == "service-a" && $0.kind == "SPAN_KIND_CLIENT" }
        #expect(clientSpans.count == Int(total))
        var fresh = 0
        var longestWait = 0.0
        for span in clientSpans {
            // Doubles in OTLP; JSON writes a whole one as an integer.
            func seconds(_ key: String) -> Double? {
                switch span.attributes[key] {
                case .double(let value)?: value
                case .int(let value)?: Double(value)
                default: nil
                }
            }
            guard let connect = seconds("herald.timing.connect"),
                let firstByte = seconds("herald.timing.time_to_first_byte"),
                let wait = seconds("herald.timing.time_in_queue"),
                case .bool(let reused)? = span.attributes["herald.connection.reused"]
            else {
                Issue.record("a client span without its timings: \(span.attributes)")
                continue
            }
            #expect(span.attributes["herald.timing.tls_handshake"] == nil)
            #expect(connect >= 0 && connect <= firstByte)
            // Counted from the end of the wait: B's 200 ms hold, not the queue.
            #expect(firstByte >= 0.19 && firstByte < 0.4, "time to first byte \(firstByte) s")
            if reused {
                #expect(connect == 0, "a reused connection has no connect time")
            } else {
                fresh += 1
                #expect(connect > 0, "a new connection's connect time")
            }
            longestWait = max(longestWait, wait)
        }
        // Six connections at most, then reused: every other request waited for one of them.
        print("connection wait: \(fresh) new connections, longest wait \(longestWait) s")
        #expect(fresh == 6, "\(fresh) new connections")
        #expect(longestWait >= 0.3, "longest wait \(longestWait) s")
        return nil
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
