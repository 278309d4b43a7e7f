import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import Testing

/// The Foundation bridge block of `Docs/MigratingFromAFNetworking.md`, run against a loopback server.
@Suite("Docs/MigratingFromAFNetworking.md bridge snippet")
struct BridgeSnippets {
    @Test("a Foundation observer of AFNetworking's completion name hears a Herald task complete")
    func bridge() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let heard = Locked<[String]>([])
        let bridging = FoundationNotificationBridge(center: .default).observe(session.notificationCenter)
        let observer = NotificationCenter.default.addObserver(
            forName: AFNetworkingNotifications.taskDidComplete, object: nil, queue: nil
        ) { note in
            let error = note.userInfo?[AFNetworkingNotifications.errorKey] as? HeraldError
            print("task finished:", error?.code.description ?? "ok")
            // doc-line: }
            heard.withLock { $0.append(error?.code.description ?? "ok") }
        }

        let recorder = RecordingObserver(center: session.notificationCenter)
        let task = try session.dataTask(with: Request(url: server.url("/json")))
        task.resume()
        try await recorder.waitForCompletions(1)
        #expect(heard.withLock { $0 } == ["ok"])
        NotificationCenter.default.removeObserver(observer)
        bridging.cancel()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
