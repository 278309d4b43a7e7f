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

/// Where a response came from, as the completion payload and each observer report it.
@Suite("Response source in the completion and the observers")
struct ResponseSourceTests {
    @Test("a network fetch, a fresh hit and a 304 revalidation: payload, log field, duration attribute, span")
    func threeSources() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        var configuration = SessionConfiguration()
        configuration.responseCache = InMemoryResponseCache()
        let session = SessionManager(configuration: configuration, notificationCenter: center)

        let logHandler = InMemoryLogHandler()
        var logger = Logger(label: "source") { _ in logHandler }
        logger.logLevel = .debug
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let loggingObserver = LoggingObserver(logger: logger)
        let tokens = [
            loggingObserver.observe(center),
            MetricsObserver(factory: metrics).observe(center),
            TracingObserver(tracer: tracer).observe(center),
        ]
        // Registered last, so by the time it has seen an event every observer above has too.
        let recorder = RecordingObserver(center: center)

        let fresh = Request(url: server.url("/headers?Cache-Control=max-age%3D600&X-Kind=fresh"))
        let stale = Request(url: server.url("/headers?Cache-Control=max-age%3D0&ETag=%22v1%22&X-Kind=stale"))
        // In order: fresh from the network, fresh from the cache, stale from the network, stale revalidated.
        let expected: [ResponseSource] = [.network, .cache, .network, .revalidated]
        for request in [fresh, fresh, stale, stale] { _ = try await session.data(for: request) }
        #expect(server.requestCount == 3)
        #expect(server.requests.last?.responseStatus == 304)

        let completions = try await recorder.waitForCompletions(expected.count).compactMap(\.completion)
            .sorted { $0.taskIdentifier < $1.taskIdentifier }
        #expect(completions.map(\.responseSource) == expected)
        #expect(completions.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
        // The cache hit never reached the network; the revalidation did.
        #expect(completions.map { $0.metrics == nil } == [false, true, false, false])

        await loggingObserver.flush()
        for completion in completions {
            let id = String(completion.taskIdentifier)
            let logged = logHandler.entries.first {
                $0.message.description == "task completed" && $0.metadata["herald.task.id"]?.description == id
            }
            #expect(logged?.metadata["herald.response.source"]?.description == completion.responseSource.rawValue)
            let span = tracer.finishedSpans.first {
                $0.attributes.get("herald.task.id") == .int64(Int64(completion.taskIdentifier))
            }
            #expect(span?.attributes.get("herald.response.source") == .string(completion.responseSource.rawValue))
        }

        let timers = metrics.timers(label: MetricsObserver.Name.requestDuration)
        var recorded: [String: Int] = [:]
        for timer in timers {
            let source = timer.dimensions.first { $0.0 == MetricsObserver.responseSourceAttribute }?.1 ?? "missing"
            recorded[source, default: 0] += timer.values.count
        }
        #expect(recorded == ["network": 2, "cache": 1, "revalidated": 1])

        tokens.forEach { $0.cancel() }
        await session.invalidateAndWait(cancelingTasks: true)
        try await server.shutdown()
    }
}
