import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The README's quick start and the snippets of `Docs/Notifications.md`, as real code run against a
/// loopback server. `SnippetCoverageTests` checks that the docs show exactly these lines.
@Suite("README and Docs/Notifications.md snippets")
struct ReadmeAndNotificationsSnippets {
    @Test("README quick start: a data task, its completion handler and a typed taskDidComplete")
    func quickStart() async throws {
        let server = try await TestServer.start()
        let recorder = RecordingObserver(center: .shared)  // the quick start's session uses the shared hub

        let session = SessionManager()  // completions run on a serial queue of its own, never on main
        let token = session.notificationCenter.addObserver(for: .taskDidComplete) { note in
            let done = note.userInfo  // a TaskCompletion: typed fields, no [AnyHashable: Any]
            print("task \(done.taskIdentifier): \(done.response?.statusCode ?? 0) in \(done.metrics?.total ?? 0) s")
        }
        // doc-line: let url = URL(string: "https://example.com/data.json")!
        let url = server.url("/json")
        let task = try session.dataTask(with: Request(url: url)) { response, json, error in
            // Exactly once, on session.completionQueue, before taskDidComplete is posted.
            let body = (json as? JSONValue)?.description ?? "-"  // compact JSON text: {"id":1,"name":"x"}
            print(response?.statusCode ?? 0, body, error?.code.description ?? "ok")
        }
        task.resume()  // tasks start suspended, as in AFNetworking and URLSession

        try await recorder.waitUntil { events in
            events.contains {
                $0.kind == .complete && $0.sessionIdentifier == session.identifier
                    && $0.taskIdentifier == task.taskIdentifier
            }
        }
        let completion = recorder.completions.first { $0.sessionIdentifier == session.identifier }
        #expect(completion?.response?.statusCode == 200)
        #expect(completion?.error == nil)
        // What the completion handler prints for the body (the same object): compact JSON text, neither
        // `Optional(…)` (the JSON serializer's output is a `JSONValue?`) nor the enum's cases.
        let json = completion?.serializedResponse
        #expect((json as? JSONValue)?.description == #"{"hello":"world","n":1}"#)
        #expect(json.map { "\($0)" } == #"Optional({"hello":"world","n":1})"#)
        withExtendedLifetime(token) {}
        recorder.cancel()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("Notifications.md: observing by name, by task, and as an async sequence")
    func observing() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        let recorder = RecordingObserver(center: center)
        let task = try session.dataTask(with: Request(url: server.url("/bytes/2048")))

        let everyCompletion = center.addObserver(for: .taskDidComplete) { note in
            let done = note.userInfo
            let outcome = done.error?.code.description ?? "ok"
            print("session \(done.sessionIdentifier), task \(done.taskIdentifier):", outcome)
        }

        let thisTask = center.addObserver(for: .taskDidComplete, object: task) { note in
            print("bytes received:", note.userInfo.metrics?.responseBodyBytes ?? 0)
        }

        let resumes = center.notifications(named: .taskDidResume, bufferingPolicy: .bufferingNewest(256))
        task.resume()
        for await note in resumes {
            print("task \(note.userInfo.taskIdentifier) is running")
            if note.userInfo.taskIdentifier == task.taskIdentifier { break }
        }

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline == ["resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)"])
        #expect(recorder.completions.first?.metrics?.responseBodyBytes == 2048)
        withExtendedLifetime((everyCompletion, thisTask)) {}
        session.invalidate(cancelingTasks: true)
        try await recorder.waitForInvalidation()
        try await server.shutdown()
    }

    @Test("Notifications.md: the async download throws a failed move with the kept file in keptFileURL")
    func keptFileOfAFailedMove() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let scratch = try ScratchDirectory()
        let request = Request(url: server.url("/bytes/4096"))
        let destination = scratch.url.appendingPathComponent("missing/dir/out.bin")
        var keptFile: URL?

        do {
            _ = try await session.download(for: request, to: destination)
        } catch {
            guard error.code == .downloadMoveFailed else { throw error }
            keptFile = error.keptFileURL  // the whole download, yours to move or delete
        }

        let kept = try #require(keptFile)
        #expect(try PatternFile.matches(kept, count: 4096))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        try FileManager.default.removeItem(at: kept)
        scratch.remove()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("Notifications.md: a drained shutdown leaves every observer with the invalidation")
    func drainedShutdown() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        let queued = Locked<[String]>([])
        let token = center.addObserver(for: .sessionDidInvalidate, delivery: .queue(DispatchQueue(label: "sink"))) {
            _ in queued.withLock { $0.append("invalidate") }
        }
        try session.dataTask(with: Request(url: server.url("/json"))).resume()

        // Every task finishes (or, with cancelingTasks: true, is cancelled), then sessionDidInvalidate is
        // posted and has reached every observer of the session's center.
        await session.invalidateAndWait()

        #expect(queued.withLock { $0 } == ["invalidate"])
        token.cancel()
        try await server.shutdown()
    }
}
