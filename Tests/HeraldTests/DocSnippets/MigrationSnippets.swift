import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The Swift side of `Docs/MigratingFromAFNetworking.md`, run against a loopback server.
/// (The activity-indicator snippet needs HeraldObservers: `Tests/HeraldObserversTests/DocSnippets`.)
@Suite("Docs/MigratingFromAFNetworking.md snippets")
struct MigrationSnippets {
    @Test("a data task, a completion observer, then serializer, progress, completion queue and invalidation")
    func sideBySide() async throws {
        let server = try await TestServer.start()
        let recorder = RecordingObserver(center: .shared)  // the guide's manager posts on the shared hub

        let manager = SessionManager(configuration: .default)
        // doc-line: let request = Request(url: URL(string: "https://example.com/users/1")!)
        let request = Request(url: server.url("/echo"))
        let task = try manager.dataTask(with: request) { response, responseObject, error in
            if let error {
                print("failed:", error.code, error.message)
            } else if let user = responseObject as? JSONValue {
                print(user["name"]?.stringValue ?? "?")
            }
        }
        task.resume()

        let observer = manager.notificationCenter.addObserver(for: .taskDidComplete) { note in
            let task = note.object as? SessionTask
            let data = note.userInfo.responseData  // was AFNetworkingTaskDidCompleteResponseDataKey
            let error = note.userInfo.error  // was AFNetworkingTaskDidCompleteErrorKey
            print(task?.taskIdentifier ?? 0, data?.count ?? 0, error?.code.description ?? "ok")
        }

        let events = try await recorder.waitUntil { events in
            events.contains {
                $0.kind == .complete && $0.sessionIdentifier == manager.identifier
                    && $0.taskIdentifier == task.taskIdentifier
            }
        }
        let completion = events.compactMap(\.completion).first { $0.sessionIdentifier == manager.identifier }
        #expect(completion?.error == nil)
        #expect(completion?.serializedResponse.flatMap { $0 as? JSONValue }?["method"] == "GET")

        manager.responseSerializer = DataResponseSerializer()
        let progress = task.downloadProgress
        print(progress.fractionCompleted)
        let onMain = SessionManager(completionQueue: .main)  // only if something drains the main queue
        manager.invalidate(cancelingTasks: true)

        #expect(progress.isFinished)
        #expect(onMain.completionQueue.label == DispatchQueue.main.label)
        withExtendedLifetime(observer) {}
        recorder.cancel()
        try await server.shutdown()
    }
}
