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

    @Test("session hooks and a response cache: a cached response is served the second time")
    func hooksAndCache() async throws {
        let server = try await TestServer.start()

        var configuration = SessionConfiguration()
        configuration.responseCache = InMemoryResponseCache(capacity: 20 << 20)
        let hooked = SessionManager(configuration: configuration)
        hooked.dataTaskDidReceiveResponse = { dataTask, response in
            (response.expectedContentLength ?? 0) > 10_000_000 ? .becomeDownload : .allow
        }
        hooked.taskDidComplete = { task, error in
            print(task.taskIdentifier, "done:", error?.code.description ?? "ok")
        }

        let request = Request(url: server.url("/headers?Cache-Control=max-age%3D60"))
        for _ in 0..<2 {
            let done = OneShot<HeraldError?>()
            let task = try hooked.dataTask(with: request) { _, _, error in done.send(error) }
            task.resume()
            #expect(try await done.value() == nil)
        }
        #expect(server.requestCount == 1)
        hooked.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
