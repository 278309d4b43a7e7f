import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing

@Suite("Observers end to end")
struct EndToEndTests {
    @Test("every observer sees a real session's tasks against the test server")
    func allObservers() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        session.responseSerializer = DataResponseSerializer()

        let clock = ManualScheduler()
        let changes = ChangeLog()
        let indicator = NetworkActivityIndicator(scheduler: clock, onChange: changes.record)
        let logHandler = InMemoryLogHandler()
        var logger = Logger(label: "e2e") { _ in logHandler }
        logger.logLevel = .debug
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let lines = SharedText()
        let loggingObserver = LoggingObserver(logger: logger)
        let eventLog = JSONLinesEventLog(stream: lines)
        let tokens = [
            indicator.observe(center),
            loggingObserver.observe(center),
            MetricsObserver(factory: metrics).observe(center),
            TracingObserver(tracer: tracer).observe(center),
            eventLog.observe(center),
        ]
        // Registered last, so by the time it has seen an event every observer above has too.
        let recorder = RecordingObserver(center: center)

        let paths = ["/bytes/4096", "/status/404", "/json"]
        for path in paths {
            try session.dataTask(with: Request(url: server.url(path))).resume()
        }
        try await recorder.waitForCompletions(paths.count)
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 1)
        #expect(indicator.state == .notActive)
        #expect(indicator.runningTaskCount == 0)
        #expect(changes.visibility.isEmpty)

        await loggingObserver.flush()
        await eventLog.flush()
        #expect(logHandler.entries.filter { $0.message.description == "task completed" }.count == 3)
        let timers = metrics.timers(label: MetricsObserver.Name.requestDuration)
        #expect(
            Set(timers.compactMap { $0.dimensions.first { $0.0 == "http.response.status_code" }?.1 }) == [
                "200", "404",
            ])
        let active = metrics.meters(label: MetricsObserver.Name.activeRequests)
        #expect(active.count == 1)
        #expect(active.first?.lastValue == 0)

        let records = try lines.text.split(separator: "\n").map {
            try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8))
        }
        for path in paths {
            let events = records.filter { $0.url == server.url(path).absoluteString }.map(\.event)
            #expect(events == ["herald.task.resume", "herald.task.complete"])
        }
        #expect(records.first { $0.url?.hasSuffix("/bytes/4096") == true && $0.status != nil }?.bytesReceived == 4096)

        await session.invalidateAndWait(cancelingTasks: true)
        await eventLog.flush()
        #expect(lines.text.split(separator: "\n").last?.contains("herald.session.invalidate") == true)
        let statuses = tracer.finishedSpans.compactMap { span -> Int64? in
            guard case .int64(let status)? = span.attributes.get("http.response.status_code") else { return nil }
            return status
        }
        #expect(statuses.sorted() == [200, 200, 404])
        tokens.forEach { $0.cancel() }
        try await server.shutdown()
    }
}
