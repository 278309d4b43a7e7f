import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import InMemoryTracing
import MetricsTestKit
import Testing

/// What the observers report for a transfer made over HTTP/2: the same notifications as over HTTP/1.1,
/// with `network.protocol.version` saying `2`.
@Suite("Observers over HTTP/2", .timeLimit(.minutes(3)))
struct HTTP2ObserverTests {
    @Test("the metrics and the client span say network.protocol.version 2 over HTTP/2, 1.1 over HTTP/1.1")
    func protocolVersionAttribute() async throws {
        try await withNginx { server in
            for (version, expected) in [(HTTPVersion.automatic, "2"), (.http1_1, "1.1")] {
                let client = try HTTP2Tests.Client(server: server, httpVersion: version)
                defer { client.close() }
                let metrics = TestMetrics()
                let tracer = InMemoryTracer()
                let center = client.session.notificationCenter
                let tokens = [
                    MetricsObserver(factory: metrics).observe(center),
                    TracingObserver(tracer: tracer).observe(center),
                ]
                defer { tokens.forEach { $0.cancel() } }
                // Registered after the observers, so once it has seen the completions they have too.
                let last = RecordingObserver(center: center)
                let tasks = try (0..<4).map {
                    try client.session.dataTask(with: Request(url: server.url("/ok/observed-\(expected)-\($0)")))
                }
                for task in tasks { task.resume() }
                _ = try await last.waitForCompletions(tasks.count, timeout: .seconds(60))
                #expect(try client.completions(of: tasks).allSatisfy { $0.error == nil })

                let timers = metrics.timers(label: MetricsObserver.Name.requestDuration)
                let versions = timers.flatMap { timer in
                    Array(
                        repeating: timer.dimensions.first { $0.0 == "network.protocol.version" }?.1,
                        count: timer.values.count)
                }
                #expect(versions.count == tasks.count)
                #expect(versions.allSatisfy { $0 == expected }, "\(versions)")

                let spans = tracer.finishedSpans.filter { $0.kind == .client }
                #expect(spans.count == tasks.count)
                #expect(
                    spans.allSatisfy { $0.attributes.get("network.protocol.version") == .string(expected) },
                    "\(spans.map { $0.attributes.get("network.protocol.version") })")
            }
        }
    }
}
