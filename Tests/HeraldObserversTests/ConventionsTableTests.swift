import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

/// Forwards to `TestMetrics` and keeps, for every metric made, its label, its swift-metrics type and its
/// dimensions, in order.
final class InstrumentRecordingFactory: MetricsFactory {
    /// One metric as the observer asked the factory for it.
    struct Made: Sendable {
        let label: String
        let type: String
        let dimensions: [(String, String)]
    }

    let test = TestMetrics()
    private let made = Locked<[Made]>([])
    var all: [Made] { made.withLock { $0 } }

    private func note(_ label: String, _ type: String, _ dimensions: [(String, String)]) {
        made.withLock { $0.append(Made(label: label, type: type, dimensions: dimensions)) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        note(label, "Counter", dimensions)
        return test.makeCounter(label: label, dimensions: dimensions)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        note(label, aggregate ? "Recorder(aggregate)" : "Recorder", dimensions)
        return test.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        note(label, "Meter", dimensions)
        return test.makeMeter(label: label, dimensions: dimensions)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        note(label, "Timer", dimensions)
        return test.makeTimer(label: label, dimensions: dimensions)
    }
    func destroyCounter(_ handler: any CounterHandler) { test.destroyCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { test.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { test.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { test.destroyTimer(handler) }
}

/// The exported instruments and span attributes, written out against OpenTelemetry's semantic conventions
/// for HTTP clients.
@Suite("OpenTelemetry conventions, instrument by instrument")
struct ConventionsTableTests {
    let tasks = OfflineTasks()

    /// One row of the conventions: what an instrument must be.
    struct Row {
        let name: String
        let kind: MetricsObserver.Instrument.Kind
        /// The swift-metrics types that may record this kind.
        let types: Set<String>
        let unit: String
        let attributes: [String]
        let buckets: [Double]?
    }

    /// The conventions' advice for `http.client.request.duration` (and, in the .NET conventions,
    /// `http.client.request.time_in_queue`), in seconds.
    static let durationAdvice: [Double] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
    /// The conventions' advice for `http.client.connection.duration`, in seconds.
    static let connectionAdvice: [Double] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
    /// Body sizes: no advice in the conventions; 0, then powers of four from 64 B to 1 GiB.
    static let bodyBuckets: [Double] = [
        0, 64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864, 268_435_456,
        1_073_741_824,
    ]
    static let target = ["http.request.method", "server.address", "server.port", "url.scheme"]
    static let outcome = target + ["http.response.status_code", "network.protocol.version", "error.type"]
    static let histogram: Set<String> = ["Timer", "Recorder(aggregate)"]

    static let table: [Row] = [
        Row(
            name: "http.client.request.duration", kind: .histogram, types: ["Timer"], unit: "s",
            attributes: outcome + ["herald.response.source"], buckets: durationAdvice),
        Row(
            name: "http.client.request.time_in_queue", kind: .histogram, types: ["Timer"], unit: "s",
            attributes: target + ["network.protocol.version"], buckets: durationAdvice),
        Row(
            name: "http.client.active_requests", kind: .upDownCounter, types: ["Meter"], unit: "{request}",
            attributes: target, buckets: nil),
        Row(
            name: "http.client.open_connections", kind: .upDownCounter, types: ["Meter"], unit: "{connection}",
            attributes: ["http.connection.state", "server.address", "server.port", "network.peer.address"],
            buckets: nil),
        Row(
            name: "http.client.connection.duration", kind: .histogram, types: ["Timer"], unit: "s",
            attributes: ["server.address", "server.port", "network.peer.address", "network.protocol.version"],
            buckets: connectionAdvice),
        Row(
            name: "http.client.request.body.size", kind: .histogram, types: ["Recorder(aggregate)"], unit: "By",
            attributes: outcome, buckets: bodyBuckets),
        Row(
            name: "http.client.response.body.size", kind: .histogram, types: ["Recorder(aggregate)"], unit: "By",
            attributes: outcome, buckets: bodyBuckets),
        Row(
            name: "herald.client.request.retries", kind: .counter, types: ["Counter"], unit: "{retry}",
            attributes: ["http.request.method", "http.response.status_code", "error.type"], buckets: nil),
        Row(
            name: "herald.client.request.connectivity_waits", kind: .counter, types: ["Counter"], unit: "{wait}",
            attributes: ["http.request.method", "error.type"], buckets: nil),
        Row(
            name: "herald.download.move_failures", kind: .counter, types: ["Counter"], unit: "{failure}",
            attributes: ["error.type"], buckets: nil),
        Row(
            name: "herald.network.reachable", kind: .gauge, types: ["Meter"], unit: "1", attributes: [],
            buckets: nil),
        Row(
            name: "herald.network.reachability.changes", kind: .counter, types: ["Counter"], unit: "{change}",
            attributes: ["herald.reachability.status"], buckets: nil),
    ]

    /// Dimensions whose value is an integer in the conventions: decimal text in swift-metrics.
    static let integerDimensions: Set<String> = ["server.port", "http.response.status_code"]

    @Test("every instrument: name, kind, unit, attributes and buckets as the conventions write them")
    func instrumentTable() throws {
        // The observer's own catalogue, row by row.
        #expect(MetricsObserver.instruments.map(\.name) == Self.table.map(\.name))
        for (row, instrument) in zip(Self.table, MetricsObserver.instruments) {
            #expect(instrument.kind == row.kind, "\(row.name)")
            #expect(instrument.unit == row.unit, "\(row.name)")
            #expect(instrument.attributes == row.attributes, "\(row.name)")
            #expect(instrument.buckets == row.buckets, "\(row.name)")
            #expect(MetricsObserver.advisedBuckets[row.name] == row.buckets, "\(row.name)")
        }

        // What the observer actually makes, driven through every notification it handles.
        let factory = InstrumentRecordingFactory()
        var configuration = MetricsObserver.Configuration()
        configuration.describesInstruments = true
        let observer = MetricsObserver(factory: factory, configuration: configuration)
        try drive(observer)

        let made = factory.all
        for row in Self.table {
            let metrics = made.filter { $0.label == row.name }
            #expect(!metrics.isEmpty, "\(row.name) was never made")
            for metric in metrics {
                #expect(row.types.contains(metric.type), "\(row.name) is a \(metric.type)")
                let names = metric.dimensions.map(\.0)
                #expect(metric.dimensions.first { $0.0 == "unit" }?.1 == row.unit, "\(row.name)")
                #expect(metric.dimensions.contains { $0.0 == "description" }, "\(row.name)")
                // The attributes, in the table's order, none outside it.
                let attributes = names.filter { $0 != "unit" && $0 != "description" }
                #expect(attributes == row.attributes.filter(attributes.contains), "\(row.name): \(attributes)")
                for (name, value) in metric.dimensions where Self.integerDimensions.contains(name) {
                    #expect(Int(value) != nil || value == "_OTHER", "\(row.name) \(name)=\(value)")
                }
                // Bounded: one of three values.
                for (name, value) in metric.dimensions where name == "herald.response.source" {
                    #expect(ResponseSource(rawValue: value) != nil, "\(row.name) \(name)=\(value)")
                }
            }
        }
        #expect(Set(made.map(\.label)).isSubset(of: Set(Self.table.map(\.name))), "an instrument not in the table")
    }

    /// Sends the observer one of each notification, and completions with and without a response.
    private func drive(_ observer: MetricsObserver) throws {
        let task = try tasks.task("https://api.example.com:8443/v1/items")
        let url = task.originalRequest.url
        observer.reachabilityDidChange(Self.reachability(Self.ethernet, previous: .unknown))
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskWillRetry(
            TypedNotification(
                name: .taskWillRetry, object: nil,
                userInfo: TaskRetry(
                    taskIdentifier: 1, sessionIdentifier: 1, request: task.summary, date: Date(), attempt: 2,
                    error: HeraldError(.unacceptableStatusCode, "503", statusCode: 503),
                    response: Payloads.response(503, url: url), delay: 0)))
        observer.taskIsWaitingForConnectivity(
            TypedNotification(
                name: .taskIsWaitingForConnectivity, object: nil,
                userInfo: TaskConnectivityWait(
                    taskIdentifier: 1, sessionIdentifier: 1, request: task.summary, date: Date(),
                    error: HeraldError(.cannotConnect, "No network."))))
        var metrics = Payloads.metrics(sent: 10, received: 2048)
        metrics.timeInQueue = 0.002
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: url), metrics: metrics))
        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(task: 2, request: task.summary, error: HeraldError(.cannotConnect, "Refused.")))
        observer.downloadDidFailToMoveFile(Payloads.moveFailure(task: 3, request: task.summary))
        for (state, previous, active, idle) in [
            (ConnectionState.active, nil, 1, 0), (.idle, .active, 0, 1), (.closed, .idle, 0, 0),
        ] as [(ConnectionState, ConnectionState?, Int, Int)] {
            observer.connectionDidChangeState(
                Payloads.connection(state, previous: previous, active: active, idle: idle, url: url))
        }
    }

    static let ethernet = NetworkReachabilityStatus.reachable(NetworkInterface(name: "eth0", index: 2, kind: .ethernet))

    static func reachability(
        _ status: NetworkReachabilityStatus, previous: NetworkReachabilityStatus
    ) -> TypedNotification<ReachabilityChange> {
        TypedNotification(
            name: .reachabilityDidChange, object: nil,
            userInfo: ReachabilityChange(status: status, previousStatus: previous, host: nil, date: Date()))
    }

    /// A span attribute's type, as the conventions give it.
    enum AttributeType: String {
        case string, int, double, bool
    }

    static let spanTable: [(String, AttributeType)] = [
        ("http.request.method", .string),
        ("url.full", .string),
        ("url.scheme", .string),
        ("server.address", .string),
        ("server.port", .int),
        ("http.response.status_code", .int),
        ("network.protocol.version", .string),
        ("http.request.body.size", .int),
        ("http.response.body.size", .int),
        ("network.peer.address", .string),
        ("network.peer.port", .int),
        ("http.request.resend_count", .int),
        ("herald.connection.reused", .bool),
        ("herald.timing.time_in_queue", .double),
        ("herald.timing.name_lookup", .double),
        ("herald.timing.connect", .double),
        ("herald.timing.tls_handshake", .double),
        ("herald.timing.time_to_first_byte", .double),
        ("herald.session.id", .int),
        ("herald.task.id", .int),
        ("herald.response.source", .string),
    ]

    @Test("every span attribute with the conventions' type, the peer and the connection's timings")
    func spanAttributeTypes() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("https://api.example.com/v1/items")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskWillRetry(
            TypedNotification(
                name: .taskWillRetry, object: nil,
                userInfo: TaskRetry(
                    taskIdentifier: 1, sessionIdentifier: 1, request: task.summary, date: Date(), attempt: 2,
                    error: HeraldError(.timedOut, "Timed out."), response: nil, delay: 0)))
        var metrics = Payloads.metrics(sent: 5, received: 9)
        metrics.tlsHandshake = 0.004
        metrics.timeInQueue = 0.003
        metrics.redirectCount = 1
        metrics.connectionReused = true
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                metrics: metrics))
        let span = try #require(tracer.finishedSpans.first)
        for (name, type) in Self.spanTable {
            let value = span.attributes.get(name)
            switch (type, value) {
            case (.string, .string?), (.int, .int64?), (.int, .int32?), (.double, .double?), (.bool, .bool?): break
            default: Issue.record("\(name): expected \(type.rawValue), found \(String(describing: value))")
            }
        }
        #expect(span.attributes.get("network.peer.address") == .string("127.0.0.1"))
        #expect(span.attributes.get("network.peer.port") == .int64(8080))
        // One retry and one redirect before the last request.
        #expect(span.attributes.get("http.request.resend_count") == .int64(2))
        #expect(span.attributes.get("herald.timing.time_in_queue") == .double(0.003))
        #expect(span.attributes.get("herald.connection.reused") == .bool(true))
    }

    @Test("no response: no response body size on the metric or the span, no request size when nothing left")
    func noBodySizeWithoutResponse() throws {
        let factory = InstrumentRecordingFactory()
        let observer = MetricsObserver(factory: factory)
        let tracer = InMemoryTracer()
        let tracing = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://127.0.0.1:9/")
        var metrics = Payloads.metrics(sent: 0, received: 0)
        metrics.requestHeaderBytes = 0
        let resume = Payloads.resume(task: 1, request: task.summary)
        let complete = Payloads.complete(
            task: 1, request: task.summary, error: HeraldError(.cannotConnect, "Refused."), metrics: metrics)
        observer.taskDidResume(resume)
        observer.taskDidComplete(complete)
        tracing.taskDidResume(resume)
        tracing.taskDidComplete(complete)
        #expect(factory.test.recorders(label: MetricsObserver.Name.responseBodySize).allSatisfy { $0.values.isEmpty })
        #expect(factory.test.recorders(label: MetricsObserver.Name.requestBodySize).allSatisfy { $0.values.isEmpty })
        #expect(factory.test.timers(label: MetricsObserver.Name.requestDuration).count == 1)
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes.get("http.response.body.size") == nil)
        #expect(span.attributes.get("http.request.body.size") == nil)
    }

    @Test("herald.network.reachable has no value until a status is known, then 1 or 0")
    func reachableOnlyOnceWatched() {
        let factory = InstrumentRecordingFactory()
        let observer = MetricsObserver(factory: factory)
        #expect(factory.test.meters(label: MetricsObserver.Name.networkReachable).isEmpty)
        observer.reachabilityDidChange(Self.reachability(.unknown, previous: .unknown))
        #expect(factory.test.meters(label: MetricsObserver.Name.networkReachable).isEmpty)
        observer.reachabilityDidChange(Self.reachability(.notReachable, previous: .unknown))
        #expect(factory.test.meters(label: MetricsObserver.Name.networkReachable).map(\.lastValue) == [0])
        observer.reachabilityDidChange(Self.reachability(Self.ethernet, previous: .notReachable))
        #expect(factory.test.meters(label: MetricsObserver.Name.networkReachable).map(\.lastValue) == [1])
    }

    @Test("the known methods are configurable: others are _OTHER, with the original on the span")
    func configurableMethods() throws {
        let factory = InstrumentRecordingFactory()
        var configuration = MetricsObserver.Configuration()
        configuration.knownMethods.insert("QUERY")
        let observer = MetricsObserver(factory: factory, configuration: configuration)
        var tracing = TracingObserverConfiguration()
        tracing.knownMethods.insert("QUERY")
        let tracer = InMemoryTracer()
        let spans = TracingObserver(tracer: tracer, configuration: tracing)
        for (number, method) in [(1, "QUERY"), (2, "PURGE")] {
            let task = try tasks.task("http://example.com/", method: method)
            let resume = Payloads.resume(task: number, request: task.summary)
            let complete = Payloads.complete(task: number, request: task.summary, metrics: Payloads.metrics())
            observer.taskDidResume(resume)
            observer.taskDidComplete(complete)
            spans.taskDidResume(resume)
            spans.taskDidComplete(complete)
        }
        let methods = factory.all.filter { $0.label == MetricsObserver.Name.requestDuration }
            .compactMap { $0.dimensions.first { $0.0 == "http.request.method" }?.1 }
        #expect(methods == ["QUERY", "_OTHER"])
        let finished = tracer.finishedSpans
        #expect(finished.map(\.operationName) == ["QUERY", "HTTP"])
        #expect(finished.map { $0.attributes.get("http.request.method") } == [.string("QUERY"), .string("_OTHER")])
        #expect(finished.map { $0.attributes.get("http.request.method_original") } == [nil, .string("PURGE")])
    }
}
