import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import Logging
import Metrics
import Testing

// The example of the HeraldObservers DocC catalog (AddingObservers.md), block for block.
// `SnippetCoverageTests` (HeraldTests) checks that the article shows exactly these lines.

/// Attaches Herald's ready observers to `session`'s hub; keep the tokens for as long as they should run.
func attachObservers(to session: SessionManager, logger: Logger) -> [ObservationToken] {
    let center = session.notificationCenter
    let indicator = NetworkActivityIndicator { change in
        if change.visibilityChanged { print(change.to.isVisible ? "busy" : "idle") }
    }
    let eventLog = JSONLinesEventLog(fileHandle: .standardError)
    let slowWork = DispatchQueue(label: "example.observers")
    return [
        indicator.observe(center),
        LoggingObserver(logger: logger).observe(center, delivery: .queue(slowWork)),
        MetricsObserver(factory: MetricsSystem.factory).observe(center),
        eventLog.observe(center, delivery: .queue(slowWork)),
    ]
}

@Suite("HeraldObservers catalog snippets")
struct ObserversCatalogSnippets {
    @Test("AddingObservers: every observer attached while a request runs")
    func addingObservers() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let tokens = attachObservers(to: session, logger: Logger(label: "doc-snippets"))
        #expect(tokens.count == 4)
        try session.dataTask(with: Request(url: server.url("/json"))).resume()
        try await recorder.waitForCompletions(1)
        tokens.forEach { $0.cancel() }
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
