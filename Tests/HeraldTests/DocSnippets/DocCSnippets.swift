import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

// The examples of the Herald and HeraldTesting DocC catalogs, block for block. `SnippetCoverageTests`
// checks that the articles show exactly these lines.

struct Greeting: Decodable, Sendable {
    let hello: String
    let n: Int
}

/// Fetches `url` with a session of its own and returns the decoded greeting.
func fetchGreeting(from url: URL) async throws -> Greeting {
    let session = SessionManager(notificationCenter: NotificationHub())
    session.responseSerializer = DecodableResponseSerializer(Greeting.self)
    defer { session.invalidate(cancelingTasks: true) }

    return try await withCheckedThrowingContinuation { continuation in
        do {
            let task = try session.dataTask(with: Request(url: url)) { _, greeting, error in
                // Exactly once, on session.completionQueue.
                if let greeting = greeting as? Greeting {
                    continuation.resume(returning: greeting)
                } else {
                    continuation.resume(throwing: error ?? HeraldError(.unknown, "No greeting."))
                }
            }
            task.resume()  // tasks start suspended
        } catch {
            continuation.resume(throwing: error)  // an invalid request or an invalidated session
        }
    }
}

@Test("a 500 completes once, after one resume, with the status code error")
func serverErrorTimeline() async throws {
    let server = try await TestServer.start()
    let center = NotificationHub()
    let session = SessionManager(notificationCenter: center)
    let recorder = RecordingObserver(center: center)

    let task = try session.dataTask(with: Request(url: server.url("/status/500")))
    task.resume()
    let events = try await recorder.waitForCompletions(1)

    #expect(recorder.timeline == ["resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)"])
    #expect(events.last?.completion?.error?.code == .unacceptableStatusCode)
    #expect(server.requests(forPath: "/status/500").count == 1)

    session.invalidate(cancelingTasks: false)
    try await recorder.waitForInvalidation()
    try await server.shutdown()
}

@Suite("DocC catalog snippets")
struct DocCSnippets {
    @Test("Herald MakingRequests: fetchGreeting decodes /json, and a 404 is a status error")
    func makingRequests() async throws {
        let server = try await TestServer.start()
        let greeting = try await fetchGreeting(from: server.url("/json"))
        #expect(greeting.hello == "world" && greeting.n == 1)
        await #expect(throws: HeraldError.self) { try await fetchGreeting(from: server.url("/status/404")) }
        try await server.shutdown()
    }

    @Test("Herald MakingRequests: the one-call async form, SessionManager.decode(_:for:)")
    func decodeInOneCall() async throws {
        let server = try await TestServer.start()
        let url = server.url("/json")
        let session = SessionManager(notificationCenter: NotificationHub())
        let (greeting, response) = try await session.decode(Greeting.self, for: Request(url: url))
        print(greeting.hello, response.statusCode)  // world 200
        #expect(greeting.hello == "world" && response.statusCode == 200)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("Herald MakingRequests: the metrics observer")
    func timingObserver() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)

        let timing = session.notificationCenter.addObserver(for: .taskDidComplete) { note in
            guard let metrics = note.userInfo.metrics else { return }
            print("\(metrics.responseBodyBytes) bytes in \(metrics.total) s, reused: \(metrics.connectionReused)")
        }

        try session.dataTask(with: Request(url: server.url("/json"))).resume()
        try await recorder.waitForCompletions(1)
        timing.cancel()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
