import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import Testing

/// Snippets of `Docs/` that use HeraldObservers, run against a loopback server.
/// `SnippetCoverageTests` (HeraldTests) checks that the docs show exactly these lines.
@Suite("Docs snippets that use HeraldObservers")
struct ObserversDocSnippets {
    @Test("MigratingFromAFNetworking.md: the activity indicator shows and hides around a request")
    func activityIndicator() async throws {
        let server = try await TestServer.start()
        let manager = SessionManager(notificationCenter: NotificationHub())

        let indicator = NetworkActivityIndicator(activationDelay: 1.0, completionDelay: 0.17) { change in
            if change.visibilityChanged { print(change.to.isVisible ? "show spinner" : "hide spinner") }
        }
        let indicatorToken = indicator.observe(manager.notificationCenter)
        // Registered after the indicator: `.posting` observers run in registration order, so once the
        // recorder has the completion, the indicator has handled it too.
        let recorder = RecordingObserver(center: manager.notificationCenter)

        let task = try manager.dataTask(with: Request(url: server.url("/json")))
        task.resume()
        try await recorder.waitForCompletions(1)
        #expect(indicator.runningTaskCount == 0)
        #expect(indicator.isEnabled)
        indicatorToken.cancel()
        manager.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
