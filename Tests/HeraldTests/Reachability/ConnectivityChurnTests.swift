import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

// Waiting for connectivity under churn, in the namespace `.ci/loopback-only` makes (see `NetworkNamespace`): a
// route that comes back while attempts fail, sessions made and invalidated while their tasks wait, a waiting task
// suspended while the route returns. Part of `ReachabilityNamespaceTests`, whose tests change the namespace's
// routes one at a time.
extension ReachabilityNamespaceTests {
    /// The number of descriptors this process has open.
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Tasks keep being resumed while the route comes back: each one either connects, or fails for want of a
    /// route and waits. None may complete with `cannotConnect`.
    @Test("a route that comes back while attempts are failing: every task waits or succeeds, none fails")
    func routeReturnsWhileAttemptsFail() async throws {
        var configuration = SessionConfiguration()
        configuration.waitsForConnectivity = true
        configuration.timeoutIntervalForResource = 60
        let fixture = try await SessionFixture.make(configuration: configuration)
        let count = 300
        try await restoringNetwork {
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesRemoved)
            let url = fixture.server.url("/json")
            let tasks = try (0..<count).map { _ in try fixture.session.dataTask(with: Request(url: url)) }
            let box = ChurnTasks(tasks)
            // Resumed one by one on another thread while the test brings the route back.
            let resumer = Thread {
                for task in box.tasks { task.resume() }
            }
            tasks[0].resume()
            try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waiting } }
            resumer.start()
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesAdded)
            try await fixture.recorder.waitForCompletions(count, timeout: .seconds(60))
            let failed = tasks.filter { $0.error != nil }
            let waited = fixture.recorder.events.filter { $0.kind == .waiting }.count
            let examples = failed.prefix(3).compactMap(\.error).map { "\($0.code): \($0.message)" }
            #expect(failed.isEmpty, "\(failed.count) of \(count) failed (\(waited) waited): \(examples)")
        }
        try await fixture.tearDown()
    }

    @Test("many sessions made and invalidated while their tasks wait: no descriptor leaks, one wait notice per task")
    func sessionsChurnWhileWaiting() async throws {
        let server = try await TestServer.start()
        try await restoringNetwork {
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesRemoved)
            var configuration = SessionConfiguration()
            configuration.waitsForConnectivity = true
            // Warm up: the engine's shared routing monitor opens its sockets with the first wait.
            func round(_ sessions: Int) async throws {
                for index in 0..<sessions {
                    let center = NotificationHub()
                    let recorder = RecordingObserver(center: center)
                    let session = SessionManager(configuration: configuration, notificationCenter: center)
                    let tasks = try (0..<3).map { _ in try session.dataTask(with: Request(url: server.url("/json"))) }
                    for task in tasks { task.resume() }
                    try await recorder.waitUntil { $0.filter { $0.kind == .waiting }.count == 3 }
                    // suspend / resume one while waiting: no second notice
                    tasks[1].suspend()
                    tasks[1].resume()
                    if index % 2 == 0 { tasks[2].cancel() }
                    await session.invalidateAndWait(cancelingTasks: true)
                    for task in tasks {
                        #expect(recorder.timeline(ofTask: task.taskIdentifier).filter { $0 == .waiting }.count == 1)
                        #expect(task.error?.code == .cancelled)
                    }
                    recorder.cancel()
                }
            }
            try await round(2)
            let before = Self.openDescriptors()
            try await round(30)
            let after = Self.openDescriptors()
            #expect(after - before <= 2, "descriptors: \(before) → \(after)")
        }
        try await server.shutdown()
    }

    @Test("a waiting task suspended, the route back, then resumed: it completes; one wait notice")
    func suspendedWhileRouteReturns() async throws {
        try await withTaskWithoutRoute { fixture, task in
            let id = task.taskIdentifier
            try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waiting } }
            task.suspend()
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesAdded)
            // The wait ends while the task is suspended; nothing completes then.
            try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waitEnded } }
            await #expect(throws: (any Error).self) {
                try await fixture.recorder.waitForCompletions(1, timeout: .seconds(1))
            }
            task.resume()
            try await fixture.recorder.waitForCompletions(1)
            // The wait ended while the task was paused; it transfers once resumed.
            #expect(
                fixture.recorder.timeline(ofTask: id) == [.resume, .waiting, .suspend, .waitEnded, .resume, .complete])
            #expect(task.error == nil)
        }
    }
}

/// The tasks a thread of the test resumes.
private final class ChurnTasks: @unchecked Sendable {
    // Safety: set once, before the thread starts; only read afterwards.
    let tasks: [SessionTask]
    init(_ tasks: [SessionTask]) { self.tasks = tasks }
}
