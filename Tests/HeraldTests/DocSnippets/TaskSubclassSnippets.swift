import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Synchronization
import Testing

// The code of `Docs/SubclassingTasks.md`, block for block. `SnippetCoverageTests` checks that the page
// shows exactly these lines.

final class OfflineAwareDataTask: DataTask, @unchecked Sendable {
    // Safety: adds only atomics.
    static let isOffline = Atomic<Bool>(false)
    let resumeCalls = Atomic<Int>(0)

    override func resume() {
        resumeCalls.add(1, ordering: .relaxed)
        // Offline: stay suspended. No state change, so nothing is posted.
        guard !Self.isOffline.load(ordering: .relaxed) else { return }
        super.resume()
    }
}

@Suite("Docs/SubclassingTasks.md", .serialized)
struct TaskSubclassSnippets {
    @Test("the offline-aware task stays suspended while offline and runs once online, posting each event once")
    func offlineAwareTask() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let request = Request(url: server.url("/json"))
        OfflineAwareDataTask.isOffline.store(true, ordering: .relaxed)
        // doc-line: let session = SessionManager()
        let session = SessionManager(notificationCenter: center)
        session.taskClasses = TaskClasses(dataTask: OfflineAwareDataTask.self)
        let task = try session.dataTask(with: request) { response, object, error in
            print(response?.statusCode ?? 0, error?.code as Any)
        }
        task.resume()

        let offlineAware = try #require(task as? OfflineAwareDataTask)
        task.downloadProgress.resume()
        #expect(task.state == .suspended)
        #expect(server.requestCount == 0)
        OfflineAwareDataTask.isOffline.store(false, ordering: .relaxed)
        task.resume()
        try await recorder.waitForCompletions(1)
        #expect(offlineAware.resumeCalls.load(ordering: .relaxed) == 3)
        #expect(recorder.timeline == ["resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)"])
        #expect(task.error == nil)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
