import Foundation
import Herald

/// The sample fleet, running: an OTLP receiver, service B, service A (which calls B through Herald) and a
/// Prometheus scraping both services, every one on 127.0.0.1, each a process of its own.
///
/// ``start(in:)`` starts them and waits until Prometheus has scraped both services once; ``stop()`` stops
/// them and removes their temporary folder (Prometheus's storage, the configuration, the logs).
public final class Fleet: Sendable {
    /// Where the fleet's programs are.
    public struct Locations: Sendable {
        /// The fleet package's folder.
        public var packageRoot: URL
        /// The built `fleet-service`.
        public var service: URL
        /// The Python with `opentelemetry-proto` installed (`make fleet-deps` makes it).
        public var python: URL
        /// The OTLP receiver script.
        public var receiverScript: URL
        /// Debian's `prometheus`.
        public var prometheus: URL
        /// The recording and alerting rules Prometheus loads (`prometheus/herald-rules.yml`).
        public var rules: URL

        /// The locations in a checkout of the fleet package, debug build: `fleet-service` beside the running
        /// program (the test runner or `fleet-demo`, in whichever build folder built them: `make` builds the
        /// fleet in the library's `.build`), else in the fleet package's own `.build`.
        public static var checkout: Locations {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            let running = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            let beside = running.deletingLastPathComponent().appending(path: "fleet-service")
            let service =
                FileManager.default.isExecutableFile(atPath: beside.path)
                ? beside : root.appending(path: ".build/debug/fleet-service")
            return Locations(
                packageRoot: root, service: service,
                python: root.appending(path: ".build/otlp-venv/bin/python3"),
                receiverScript: root.appending(path: "OTLPReceiver/otlp_receiver.py"),
                prometheus: URL(fileURLWithPath: "/usr/bin/prometheus"),
                rules: root.appending(path: "prometheus/herald-rules.yml"))
        }
    }

    /// The services' and back ends' base URLs.
    public let serviceA: URL
    /// Service B's base URL.
    public let serviceB: URL
    /// Prometheus's base URL.
    public let prometheus: URL
    /// The OTLP receiver's base URL.
    public let receiver: URL
    /// The fleet's temporary folder.
    public let directory: URL

    private let processes: [ChildProcess]
    /// The harness's own HTTP client: Herald.
    private let session: SessionManager

    private init(
        serviceA: URL, serviceB: URL, prometheus: URL, receiver: URL, directory: URL, processes: [ChildProcess]
    ) {
        self.serviceA = serviceA
        self.serviceB = serviceB
        self.prometheus = prometheus
        self.receiver = receiver
        self.directory = directory
        self.processes = processes
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 64
        self.session = SessionManager(configuration: configuration)
    }

    /// Starts the fleet and waits until Prometheus has scraped both services.
    /// - Parameter locations: Where the programs are; default ``Locations/checkout``.
    /// - Returns: The running fleet.
    /// - Throws: ``FleetError`` when a program is missing, does not start, or Prometheus does not see both
    ///   services within a minute; whatever was started is stopped again. Cancelled, it stops what it started,
    ///   removes the fleet's folder and throws `CancellationError`.
    public static func start(_ locations: Locations = .checkout) async throws -> Fleet {
        for (path, hint) in [
            (locations.service, "build the fleet package (swift build)"),
            (locations.python, "run `make fleet-deps`"),
            (locations.prometheus, "run `make fleet-deps` (Debian's prometheus)"),
        ] where !FileManager.default.isExecutableFile(atPath: path.path) {
            throw FleetError("\(path.path) is missing: \(hint)")
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "herald-fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var started: [ChildProcess] = []
        do {
            let receiver = try ChildProcess(
                name: "otlp-receiver", executable: locations.python, arguments: [locations.receiverScript.path, "0"],
                logDirectory: directory)
            started.append(receiver)
            let receiverURL = try loopback(await receiver.waitForPort())

            let serviceB = try ChildProcess(
                name: "service-b", executable: locations.service,
                arguments: ["--name", "service-b", "--otlp", receiverURL.absoluteString], logDirectory: directory)
            started.append(serviceB)
            let serviceBURL = try loopback(await serviceB.waitForPort())
            let serviceA = try ChildProcess(
                name: "service-a", executable: locations.service,
                arguments: [
                    "--name", "service-a", "--otlp", receiverURL.absoluteString, "--downstream",
                    serviceBURL.absoluteString,
                ], logDirectory: directory)
            started.append(serviceA)
            let serviceAURL = try loopback(await serviceA.waitForPort())

            let prometheusPort = try freeLoopbackPort()
            let configuration = directory.appending(path: "prometheus.yml")
            guard FileManager.default.isReadableFile(atPath: locations.rules.path) else {
                throw FleetError("\(locations.rules.path) is missing")
            }
            try prometheusConfiguration(serviceA: serviceAURL, serviceB: serviceBURL, rules: locations.rules)
                .write(to: configuration, atomically: true, encoding: .utf8)
            let prometheus = try ChildProcess(
                name: "prometheus", executable: locations.prometheus,
                arguments: [
                    "--config.file=\(configuration.path)",
                    "--storage.tsdb.path=\(directory.appending(path: "prometheus-data").path)",
                    "--web.listen-address=127.0.0.1:\(prometheusPort)", "--log.level=warn",
                ], logDirectory: directory)
            started.append(prometheus)
            let fleet = Fleet(
                serviceA: serviceAURL, serviceB: serviceBURL, prometheus: try loopback(prometheusPort),
                receiver: receiverURL, directory: directory, processes: started)
            do {
                _ = try await fleet.waitForQuery("sum(up)", seconds: 60) { $0.first?.value == 2 }
            } catch {
                // Cancelled, the caller wants nothing left behind; failed, the logs tell why.
                let cancelled = Task.isCancelled
                await Task { await fleet.stop(keepingLogs: !cancelled) }.value
                if cancelled { throw CancellationError() }
                throw FleetError("\(error); Prometheus's log: \(prometheus.logTail())")
            }
            return fleet
        } catch {
            // In a task of its own, so that a cancelled start still waits for each program to stop.
            let cancelled = Task.isCancelled
            await Task {
                for process in started.reversed() { await process.stop() }
                if cancelled { try? FileManager.default.removeItem(at: directory) }
            }.value
            throw error
        }
    }

    /// Stops every program (SIGTERM, so the services flush their telemetry) and removes the fleet's folder,
    /// unless `keepingLogs`.
    public func stop(keepingLogs: Bool = false) async {
        for process in processes.reversed() { await process.stop() }
        await session.invalidateAndWait(cancelingTasks: true)
        if !keepingLogs { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: - load

    /// Sends `GET path` to service A and returns the status.
    /// - Parameters:
    ///   - path: The path and query, such as `/work?status=404`.
    ///   - traceParent: A `traceparent` to send, making A's span a child of a span the caller names.
    /// - Throws: ``FleetError`` when the request fails.
    public func request(_ path: String, traceParent: String? = nil) async throws -> Int {
        guard let url = URL(string: path, relativeTo: serviceA)?.absoluteURL else {
            throw FleetError("not a path: \(path)")
        }
        var headers = HTTPHeaders()
        if let traceParent { headers.add(name: "traceparent", value: traceParent) }
        do {
            return try await session.data(for: Request(url: url, headers: headers)).1.statusCode
        } catch {
            throw FleetError("GET \(url.absoluteString): \(error)")
        }
    }

    /// Sends the paths to service A, `concurrency` at a time, and returns how many got each status.
    public func load(_ paths: [String], concurrency: Int = 16) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var statuses: [Int: Int] = [:]
            var next = paths.makeIterator()
            for _ in 0..<max(1, concurrency) {
                guard let path = next.next() else { break }
                group.addTask { try await self.request(path) }
            }
            while let status = try await group.next() {
                statuses[status, default: 0] += 1
                if let path = next.next() { group.addTask { try await self.request(path) } }
            }
            return statuses
        }
    }

    /// A service's `/metrics` page, as Prometheus scrapes it.
    /// - Parameter service: The service's base URL, such as ``serviceA``.
    /// - Throws: ``FleetError`` when the request fails or is not answered with 200.
    public func scrape(_ service: URL) async throws -> String {
        let url = service.appending(path: "metrics")
        let (body, response): (Data, HTTPResponse)
        do {
            (body, response) = try await session.data(for: Request(url: url))
        } catch {
            throw FleetError("GET \(url.absoluteString): \(error)")
        }
        guard response.statusCode == 200 else {
            throw FleetError("GET \(url.absoluteString): status \(response.statusCode)")
        }
        return String(decoding: body, as: UTF8.self)
    }

    // MARK: - Prometheus

    /// Runs an instant PromQL query.
    /// - Throws: ``FleetError`` when Prometheus refuses the query or answers something else than a vector.
    public func query(_ promQL: String) async throws -> [PromSample] {
        var components = URLComponents(url: prometheus.appending(path: "api/v1/query"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "query", value: promQL)]
        guard let url = components?.url else { throw FleetError("cannot encode the query \(promQL)") }
        let answer = try JSONDecoder().decode(PromQueryAnswer.self, from: try await get(url))
        guard answer.status == "success", let data = answer.data, data.resultType == "vector" else {
            throw FleetError("Prometheus refused \(promQL): \(answer.error ?? answer.status)")
        }
        return data.result.map { PromSample(labels: $0.metric, value: $0.value.number) }
    }

    /// Polls a PromQL query (every 250 ms) until `isDone` accepts its answer. Polled because Prometheus
    /// scrapes on its own schedule (every second here) and its API has no way to wait for a result.
    /// - Throws: ``FleetError`` when `seconds` pass first, with the last answer.
    public func waitForQuery(
        _ promQL: String, seconds: Double = 30, until isDone: @escaping @Sendable ([PromSample]) -> Bool
    ) async throws -> [PromSample] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var last: Result<[PromSample], any Error> = .success([])
        while ContinuousClock.now < deadline {
            do {
                let samples = try await query(promQL)
                if isDone(samples) { return samples }
                last = .success(samples)
            } catch {
                last = .failure(error)
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw FleetError("\(promQL) did not reach the expected answer within \(seconds) s; last: \(last)")
    }

    // MARK: - OTLP receiver

    /// Every span the services exported so far.
    public func spans() async throws -> [ExportedSpan] {
        try JSONDecoder().decode([ExportedSpan].self, from: try await get(receiver.appending(path: "spans")))
    }

    /// Every metric data point the services exported so far.
    public func metricPoints() async throws -> [ExportedMetricPoint] {
        try JSONDecoder().decode([ExportedMetricPoint].self, from: try await get(receiver.appending(path: "metrics")))
    }

    /// Every log record the services exported so far.
    public func logRecords() async throws -> [ExportedLogRecord] {
        try JSONDecoder().decode([ExportedLogRecord].self, from: try await get(receiver.appending(path: "logs")))
    }

    /// Waits until the trace has `count` spans, and returns them.
    /// - Throws: ``FleetError`` when `seconds` pass first.
    public func waitForTrace(_ traceID: String, spans count: Int, seconds: Double = 30) async throws -> [ExportedSpan] {
        let found: [ExportedSpan] = try await waitForRecords("spans", seconds: seconds) { spans in
            spans.filter { $0.traceId == traceID }.count >= count
        }
        return found.filter { $0.traceId == traceID }
    }

    /// Waits until the spans the services exported satisfy `isDone`, and returns them all.
    /// - Throws: ``FleetError`` when `seconds` pass first.
    public func waitForSpans(
        seconds: Double = 30, until isDone: @escaping @Sendable ([ExportedSpan]) -> Bool
    ) async throws -> [ExportedSpan] {
        try await waitForRecords("spans", seconds: seconds, until: isDone)
    }

    /// Waits until the log records the services exported include one that `matches`, and returns those
    /// that do.
    /// - Throws: ``FleetError`` when `seconds` pass first.
    public func waitForLogRecords(
        seconds: Double = 30, matching matches: @escaping @Sendable (ExportedLogRecord) -> Bool
    ) async throws -> [ExportedLogRecord] {
        try await waitForRecords("logs", seconds: seconds) { $0.contains(where: matches) }.filter(matches)
    }

    /// Waits until the metric points the services exported include one that `matches`, and returns those
    /// that do.
    /// - Throws: ``FleetError`` when `seconds` pass first.
    public func waitForMetricPoints(
        seconds: Double = 30, matching matches: @escaping @Sendable (ExportedMetricPoint) -> Bool
    ) async throws -> [ExportedMetricPoint] {
        try await waitForRecords("metrics", seconds: seconds) { $0.contains(where: matches) }.filter(matches)
    }

    /// Every record of one kind the receiver holds, once `isDone` accepts them. The services' exporters run
    /// in other processes and announce nothing, but their exports reach the receiver: each query asks it to
    /// answer when it holds more records than the last answer had (`after`, `wait`), so this waits for the
    /// exports themselves, not on a timer.
    private func waitForRecords<Record: Decodable>(
        _ kind: String, seconds: Double, until isDone: ([Record]) -> Bool
    ) async throws -> [Record] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var records: [Record] = []
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            let wait = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            var components = URLComponents(url: receiver.appending(path: kind), resolvingAgainstBaseURL: false)
            components?.queryItems = [
                URLQueryItem(name: "after", value: String(records.count)),
                URLQueryItem(name: "wait", value: String(format: "%.3f", min(wait, 30))),
            ]
            guard let url = components?.url else { throw FleetError("cannot encode a query for \(kind)") }
            records = try JSONDecoder().decode([Record].self, from: try await get(url))
            if isDone(records) { return records }
        }
        throw FleetError("the receiver's \(kind) did not reach the expected records within \(seconds) s")
    }

    private func get(_ url: URL) async throws -> Data {
        let (body, response): (Data, HTTPResponse)
        do {
            (body, response) = try await session.data(for: Request(url: url))
        } catch {
            throw FleetError("GET \(url.absoluteString): \(error)")
        }
        // Prometheus answers a refused query with 400 and a JSON body saying why.
        guard response.statusCode == 200 || response.statusCode == 400 else {
            throw FleetError("GET \(url.absoluteString): status \(response.statusCode)")
        }
        return body
    }

    private static func loopback(_ port: Int) throws -> URL {
        guard let url = URL(string: "http://127.0.0.1:\(port)") else { throw FleetError("bad port \(port)") }
        return url
    }

    private static func prometheusConfiguration(serviceA: URL, serviceB: URL, rules: URL) -> String {
        """
        global:
          scrape_interval: 1s
          scrape_timeout: 1s
          evaluation_interval: 1s
        rule_files:
          - '\(rules.path)'
        scrape_configs:
          - job_name: service-a
            static_configs:
              - targets: ['127.0.0.1:\(serviceA.port ?? 0)']
          - job_name: service-b
            static_configs:
              - targets: ['127.0.0.1:\(serviceB.port ?? 0)']

        """
    }
}
