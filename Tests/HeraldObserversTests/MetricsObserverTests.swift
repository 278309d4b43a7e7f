import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import MetricsTestKit
import Testing

/// Forwards to `TestMetrics` and counts how many metric objects were made (TestMetrics itself returns
/// the same handler for the same label and dimensions, which would hide a metric made per request).
final class CountingMetrics: MetricsFactory {
    let test = TestMetrics()
    private let made = Locked<[String: Int]>([:])

    func count(_ label: String) -> Int { made.withLock { $0[label, default: 0] } }
    private func note(_ label: String) { made.withLock { $0[label, default: 0] += 1 } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        note(label)
        return test.makeCounter(label: label, dimensions: dimensions)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        note(label)
        return test.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        note(label)
        return test.makeMeter(label: label, dimensions: dimensions)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        note(label)
        return test.makeTimer(label: label, dimensions: dimensions)
    }
    func destroyCounter(_ handler: any CounterHandler) { test.destroyCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { test.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { test.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { test.destroyTimer(handler) }
}

@Suite("Metrics observer")
struct MetricsObserverTests {
    let tasks = OfflineTasks()

    /// `http.client.active_requests`' dimensions for a GET to `host` on port 80 over http.
    /// The duration's own attribute for a task answered by the network (the payloads' default source).
    static let network = [("herald.response.source", "network")]

    static func target(_ host: String = "127.0.0.1", method: String = "GET") -> [(String, String)] {
        [("http.request.method", method), ("server.address", host), ("server.port", "80"), ("url.scheme", "http")]
    }

    @Test("a host spelled in capitals is one server: server.address in lower case, and no redirect is seen")
    func hostCaseFolded() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("HTTP://API.Example.com/a")
        let start = Date()
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary, date: start))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target("api.example.com"))
        #expect(active.lastValue == 1)
        // libcurl reports the URL it used in lower case: the same server, not a redirect to another.
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary,
                response: Payloads.response(200, url: URL(string: "http://api.example.com/a")!),
                metrics: Payloads.metrics(total: 0.5, sent: 0, received: 10, startDate: start)))
        #expect(active.lastValue == 0)
        let dimensions =
            Self.target("api.example.com") + [
                ("http.response.status_code", "200"), ("network.protocol.version", "1.1"),
            ]
        #expect(
            try metrics.test.expectTimer(MetricsObserver.Name.requestDuration, dimensions + Self.network).values.count
                == 1)
    }

    @Test("duration in seconds, body sizes and active requests under OpenTelemetry names and attributes")
    func recordsOTelMetrics() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://example.com/a")
        let start = Date()
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary, date: start))
        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target("example.com"))
        #expect(active.lastValue == 2)
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                metrics: Payloads.metrics(total: 0.5, sent: 3, received: 4096, startDate: start)))
        #expect(active.lastValue == 1)
        let dimensions =
            Self.target("example.com") + [("http.response.status_code", "200"), ("network.protocol.version", "1.1")]
        let timer = try metrics.test.expectTimer(MetricsObserver.Name.requestDuration, dimensions + Self.network)
        #expect(timer.values == [500_000_000])
        #expect(timer.displayUnit == .seconds)
        #expect(try metrics.test.expectRecorder(MetricsObserver.Name.responseBodySize, dimensions).values == [4096])
        #expect(try metrics.test.expectRecorder(MetricsObserver.Name.requestBodySize, dimensions).values == [3])
    }

    @Test(
        "a revalidated response is recorded with the protocol its 304 came over and no body size; a cache hit with no protocol"
    )
    func revalidatedAndCachedVersions() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://127.0.0.1/a")
        var stored = Payloads.response(200, url: task.originalRequest.url)
        stored.httpVersion = "HTTP/1.1"
        var overHTTP2 = Payloads.metrics(total: 0.5, received: 0)
        overHTTP2.httpVersion = "HTTP/2"
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: stored, metrics: overHTTP2, source: .revalidated))
        let revalidated =
            Self.target() + [("http.response.status_code", "200"), ("network.protocol.version", "2")]
        let timer = try metrics.test.expectTimer(
            MetricsObserver.Name.requestDuration, revalidated + [("herald.response.source", "revalidated")])
        #expect(timer.values == [500_000_000])
        #expect(
            metrics.test.recorders.filter { $0.label == MetricsObserver.Name.responseBodySize }
                .allSatisfy { $0.values.isEmpty })

        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        observer.taskDidComplete(Payloads.complete(task: 2, request: task.summary, response: stored, source: .cache))
        let cached = Self.target() + [("http.response.status_code", "200")]
        #expect(
            try metrics.test.expectTimer(
                MetricsObserver.Name.requestDuration, cached + [("herald.response.source", "cache")]
            ).values.count == 1)
    }

    @Test(
        "after a redirect to another server, the request is recorded under that server; the active count under the first"
    )
    func redirectedToAnotherServer() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://a.example/a")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        let finalURL = try #require(URL(string: "https://b.example:8443/file"))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: finalURL),
                metrics: Payloads.metrics(total: 0.25)))
        let final = [
            ("http.request.method", "GET"), ("server.address", "b.example"), ("server.port", "8443"),
            ("url.scheme", "https"), ("http.response.status_code", "200"), ("network.protocol.version", "1.1"),
        ]
        #expect(
            try metrics.test.expectTimer(MetricsObserver.Name.requestDuration, final + Self.network).values.count == 1)
        #expect(
            try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target("a.example")).lastValue == 0)
    }

    @Test("an observer released with requests running and connections open takes its counts back")
    func releasedObserverTakesCountsBack() throws {
        let metrics = CountingMetrics()
        var observer: MetricsObserver? = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://127.0.0.1/a")
        observer?.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer?.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        observer?.taskDidSuspend(Payloads.suspend(task: 2, request: task.summary))
        let url = URL(string: "https://127.0.0.1:8443/items")!
        observer?.connectionDidChangeState(Payloads.connection(.active, previous: nil, active: 2, idle: 1, url: url))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target())
        let pool = [("server.address", "127.0.0.1"), ("server.port", "8443"), ("network.peer.address", "127.0.0.1")]
        let open = try metrics.test.expectMeter(
            MetricsObserver.Name.openConnections, [("http.connection.state", "active")] + pool)
        let idle = try metrics.test.expectMeter(
            MetricsObserver.Name.openConnections, [("http.connection.state", "idle")] + pool)
        #expect((active.lastValue, open.lastValue, idle.lastValue) == (1, 2, 1))
        observer = nil
        #expect((active.lastValue, open.lastValue, idle.lastValue) == (0, 0, 0))
    }

    @Test("the advised duration buckets are OpenTelemetry's for http.client.request.duration")
    func advisedBuckets() {
        #expect(
            MetricsObserver.advisedDurationBuckets == [
                0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
            ])
    }

    @Test("dimensions are bounded: the first hosts by name, later ones _OTHER; never the URL path")
    func boundedDimensions() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        for index in 0..<50 {
            let task = try tasks.task("http://host\(index).example.com/items/\(index)", method: "GET")
            observer.taskDidResume(Payloads.resume(task: index, request: task.summary))
            observer.taskDidComplete(
                Payloads.complete(
                    task: index, request: task.summary, response: Payloads.response(404, url: task.originalRequest.url),
                    metrics: Payloads.metrics()))
        }
        let timers = metrics.test.timers(label: MetricsObserver.Name.requestDuration)
        // The default 32 hosts by name, and one set for the 18 after them.
        #expect(timers.count == 33)
        #expect(timers.flatMap(\.values).count == 50)
        let dimensionNames = Set(timers.flatMap { $0.dimensions.map(\.0) })
        #expect(
            dimensionNames == [
                "http.request.method", "server.address", "server.port", "url.scheme", "http.response.status_code",
                "network.protocol.version", "error.type", "herald.response.source",
            ])
        let failed =
            Self.target("host0.example.com")
            + [("http.response.status_code", "404"), ("network.protocol.version", "1.1"), ("error.type", "404")]
        #expect(
            try metrics.test.expectTimer(MetricsObserver.Name.requestDuration, failed + Self.network).values.count == 1)
        let overflow =
            [("http.request.method", "GET"), ("server.address", "_OTHER"), ("server.port", "_OTHER")]
            + [("url.scheme", "http"), ("http.response.status_code", "404"), ("network.protocol.version", "1.1")]
            + [("error.type", "404")]
        #expect(
            try metrics.test.expectTimer(MetricsObserver.Name.requestDuration, overflow + Self.network).values.count
                == 18)
        #expect(!timers.contains { $0.dimensions.contains { $0.1.contains("items") } })

        let odd = try tasks.task("http://host0.example.com/", method: "BREW")
        observer.taskDidResume(Payloads.resume(task: 99, request: odd.summary))
        observer.taskDidComplete(
            Payloads.complete(task: 99, request: odd.summary, error: HeraldError(.cannotConnect, "No.")))
        let refused = try metrics.test.expectTimer(
            MetricsObserver.Name.requestDuration,
            Self.target("host0.example.com", method: "_OTHER") + [("error.type", "cannot_connect")] + Self.network)
        #expect(refused.values.count == 1)
    }

    @Test("tasks resumed in any order of methods, hosts and ports are each counted under their own target")
    func activeRequestsInAnyOrder() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        // Each pair in a row shares the method and URL; each next pair differs from the one before in one thing.
        let resumed: [(url: String, method: String)] = [
            ("http://a.example.com/", "GET"), ("http://a.example.com/", "GET"),
            ("http://b.example.com/", "GET"), ("http://b.example.com/", "GET"),
            ("http://b.example.com/", "POST"), ("http://b.example.com/", "POST"),
            ("http://b.example.com:8080/", "POST"), ("http://a.example.com/", "GET"),
            ("http://a.example.com/other", "GET"),
        ]
        for (index, task) in resumed.enumerated() {
            let made = try tasks.task(task.url, method: task.method)
            observer.taskDidResume(Payloads.resume(task: index, request: made.summary))
        }
        func active(_ host: String, _ method: String, port: String = "80") throws -> Double? {
            let dimensions = [
                ("http.request.method", method), ("server.address", host), ("server.port", port),
                ("url.scheme", "http"),
            ]
            return try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, dimensions).lastValue
        }
        #expect(try active("a.example.com", "GET") == 4)
        #expect(try active("b.example.com", "GET") == 2)
        #expect(try active("b.example.com", "POST") == 2)
        #expect(try active("b.example.com", "POST", port: "8080") == 1)
        #expect(metrics.count(MetricsObserver.Name.activeRequests) == 4)
    }

    @Test("metric objects are created once per dimension set, not per request")
    func createdOnce() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://example.com/")
        for index in 0..<100 {
            observer.taskDidResume(Payloads.resume(task: index, request: task.summary))
            observer.taskDidComplete(
                Payloads.complete(
                    task: index, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                    metrics: Payloads.metrics()))
        }
        #expect(metrics.count(MetricsObserver.Name.requestDuration) == 1)
        #expect(metrics.count(MetricsObserver.Name.responseBodySize) == 1)
        #expect(metrics.count(MetricsObserver.Name.activeRequests) == 1)
    }

    @Test("server.address can be left out, and the number of dimension sets is capped")
    func dimensionSetsCapped() throws {
        let metrics = CountingMetrics()
        var configuration = MetricsObserver.Configuration()
        configuration.includesServerAddress = false
        configuration.maximumDimensionSets = 4
        let observer = MetricsObserver(factory: metrics, configuration: configuration)
        for index in 0..<20 {
            let task = try tasks.task("http://host\(index).example.com/")
            observer.taskDidResume(Payloads.resume(task: index, request: task.summary))
            let response = Payloads.response(200 + index, url: task.originalRequest.url)
            observer.taskDidComplete(
                Payloads.complete(task: index, request: task.summary, response: response, metrics: Payloads.metrics()))
        }
        let timers = metrics.test.timers(label: MetricsObserver.Name.requestDuration)
        #expect(timers.count == 5)
        #expect(!timers.contains { $0.dimensions.contains { $0.0 == "server.address" || $0.0 == "server.port" } })
        let overflow = try metrics.test.expectTimer(
            MetricsObserver.Name.requestDuration,
            [
                ("http.request.method", "_OTHER"), ("url.scheme", "_OTHER"), ("http.response.status_code", "_OTHER"),
                ("network.protocol.version", "_OTHER"), ("herald.response.source", "network"),
            ])
        #expect(overflow.values.count == 16)
    }

    @Test("active requests are counted per method, server and scheme")
    func activeRequestsByTarget() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let first = try tasks.task("http://a.example.com/")
        let second = try tasks.task("http://b.example.com/", method: "POST")
        observer.taskDidResume(Payloads.resume(task: 1, request: first.summary))
        observer.taskDidResume(Payloads.resume(task: 2, request: second.summary))
        observer.taskDidResume(Payloads.resume(task: 3, request: second.summary))
        let toA = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target("a.example.com"))
        let toB = try metrics.test.expectMeter(
            MetricsObserver.Name.activeRequests, Self.target("b.example.com", method: "POST"))
        #expect(toA.lastValue == 1)
        #expect(toB.lastValue == 2)
        observer.taskDidSuspend(Payloads.suspend(task: 2, request: second.summary))
        observer.taskDidComplete(Payloads.complete(task: 1, request: first.summary))
        #expect(toA.lastValue == 0)
        #expect(toB.lastValue == 1)
    }

    @Test("duplicate and missing events never drive active requests negative")
    func activeNeverNegative() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        observer.taskDidComplete(Payloads.complete(task: 1))
        observer.taskDidSuspend(Payloads.suspend(task: 1))
        observer.taskDidResume(Payloads.resume(task: 2))
        observer.taskDidResume(Payloads.resume(task: 2))
        observer.taskDidComplete(Payloads.complete(task: 2))
        observer.taskDidComplete(Payloads.complete(task: 2))
        observer.taskDidResume(Payloads.resume(task: 3, session: 5))
        observer.sessionDidInvalidate(Payloads.invalidate(session: 5))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target())
        #expect(active.values.allSatisfy { $0 >= 0 })
        #expect(active.lastValue == 0)
        // A task completed without ever resuming made no request: no duration recorded.
        #expect(metrics.test.timers(label: MetricsObserver.Name.requestDuration).flatMap(\.values).count == 1)
    }

    @Test("a task cancelled before it ever resumed creates no series at all, not even an empty one")
    func neverResumedMakesNoSeries() {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        observer.taskDidComplete(Payloads.complete(task: 1, error: HeraldError(.cancelled, "Cancelled.")))
        #expect(metrics.test.timers(label: MetricsObserver.Name.requestDuration).isEmpty)
        #expect(metrics.test.recorders.filter { $0.label == MetricsObserver.Name.responseBodySize }.isEmpty)
    }

    @Test("alternating dimension sets each record under their own instruments")
    func alternatingDimensionSets() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://example.com/a")
        let statuses = [200, 404, 200, 200, 503, 404]
        for (index, status) in statuses.enumerated() {
            let response = Payloads.response(status, url: task.originalRequest.url)
            let start = Date()
            observer.taskDidResume(Payloads.resume(task: index, request: task.summary, date: start))
            observer.taskDidComplete(
                Payloads.complete(
                    task: index, request: task.summary, response: response,
                    metrics: Payloads.metrics(total: Double(index + 1), startDate: start)))
        }
        func seconds(_ status: String) throws -> [Int64] {
            let failure = status.hasPrefix("2") ? [] : [("error.type", status)]
            return try metrics.test.expectTimer(
                MetricsObserver.Name.requestDuration,
                Self.target("example.com")
                    + [("http.response.status_code", status), ("network.protocol.version", "1.1")] + failure
                    + Self.network
            ).values
        }
        #expect(try seconds("200") == [1_000_000_000, 3_000_000_000, 4_000_000_000])
        #expect(try seconds("404") == [2_000_000_000, 6_000_000_000])
        #expect(try seconds("503") == [5_000_000_000])
        #expect(metrics.count(MetricsObserver.Name.requestDuration) == 3)
    }

    @Test("a suspended task leaves active requests, and without metrics is timed from its first resume")
    func suspendAndResumeAgain() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let start = Date(timeIntervalSince1970: 1_000)
        observer.taskDidResume(Payloads.resume(task: 1, date: start))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, Self.target())
        #expect(active.lastValue == 1)
        observer.taskDidSuspend(Payloads.suspend(task: 1))
        #expect(active.lastValue == 0)
        observer.taskDidSuspend(Payloads.suspend(task: 1))
        #expect(active.lastValue == 0)
        observer.taskDidResume(Payloads.resume(task: 1, date: start.addingTimeInterval(5)))
        #expect(active.lastValue == 1)
        observer.taskDidComplete(Payloads.complete(task: 1, date: start.addingTimeInterval(7)))
        #expect(active.lastValue == 0)
        let durations = metrics.test.timers(label: MetricsObserver.Name.requestDuration).flatMap(\.values)
        #expect(durations == [7_000_000_000])
    }

    @Test(
        "a retried or redirected task is timed from its first resume to its completion, not by its last transfer",
        arguments: [(retryDelay: 0.0, redirects: 0), (retryDelay: 2.0, redirects: 0), (retryDelay: -1, redirects: 1)])
    func multiTransferDuration(retryDelay: TimeInterval, redirects: Int) throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let start = Date(timeIntervalSince1970: 1_000)
        observer.taskDidResume(Payloads.resume(task: 1, date: start))
        // A negative delay: no retry, only the redirect the final metrics count.
        if retryDelay >= 0 {
            observer.taskWillRetry(Payloads.retry(task: 1, delay: retryDelay, date: start.addingTimeInterval(3)))
        }
        // The last transfer took a second; the task, seven.
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, response: Payloads.response(200, url: Payloads.anyRequest.url),
                metrics: Payloads.metrics(total: 1, redirects: redirects), date: start.addingTimeInterval(7)))
        let durations = metrics.test.timers(label: MetricsObserver.Name.requestDuration).flatMap(\.values)
        #expect(durations == [7_000_000_000])
    }

    @Test(
        "a task of one transfer is timed from its resume to its transfer's end: an adapter's time in, the completion handler's out"
    )
    func singleTransferDuration() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let start = Date(timeIntervalSince1970: 1_000)
        observer.taskDidResume(Payloads.resume(task: 1, date: start))
        // An adapter took a quarter of a second before the transfer began; the transfer took a second; the
        // completion handler another quarter before taskDidComplete.
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, response: Payloads.response(200, url: Payloads.anyRequest.url),
                metrics: Payloads.metrics(total: 1, startDate: start.addingTimeInterval(0.25)),
                date: start.addingTimeInterval(1.5)))
        let durations = metrics.test.timers(label: MetricsObserver.Name.requestDuration).flatMap(\.values)
        #expect(durations == [1_250_000_000])
    }

    @Test("failed download moves are counted by error type, one counter made per type")
    func moveFailuresCounted() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        for task in 1...3 { observer.downloadDidFailToMoveFile(Payloads.moveFailure(task: task)) }
        let counter = try metrics.test.expectCounter(
            MetricsObserver.Name.downloadMoveFailures, [("error.type", "download_move_failed")])
        #expect(counter.totalValue == 3)
        #expect(metrics.test.counters(label: MetricsObserver.Name.downloadMoveFailures).count == 1)
        #expect(metrics.count(MetricsObserver.Name.downloadMoveFailures) == 1)
    }
}
