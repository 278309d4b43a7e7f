import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The snippets of the DocC article "Reachability and waiting for connectivity", run in the test process's
/// namespace (only loopback: the network in general is not reachable there). Nothing is changed: the
/// namespace tests change links and routes.
@Suite("Reachability.md snippets")
struct ReachabilitySnippets {
    @Test("monitoring: the status is known when startMonitoring returns, and the first change is posted")
    func monitoring() async throws {
        let printed = Locked<[String]>([])
        let handled = OneShot<Void>()
        @Sendable func print(_ line: String) {
            printed.withLock { $0.append(line) }
            handled.send(())
        }
        let reachability = NetworkReachability()
        reachability.setReachabilityStatusChangeHandler { status in
            print("network: \(status.localizedDescription)")
        }
        try reachability.startMonitoring()
        defer { reachability.stopMonitoring() }
        #expect(reachability.status == .notReachable)
        try await handled.value(timeout: .seconds(10))
        #expect(printed.withLock { $0 } == ["network: Not Reachable"])
    }

    @Test("observing reachabilityDidChange on the shared center")
    func observing() async throws {
        let seen = OneShot<String>()
        @Sendable func print(_ line: String) { seen.send(line) }
        let token = NotificationHub.shared.addObserver(for: .reachabilityDidChange) { note in
            print("now \(note.userInfo.status), was \(note.userInfo.previousStatus)")
        }
        defer { token.cancel() }
        let reachability = NetworkReachability()
        try reachability.startMonitoring()
        defer { reachability.stopMonitoring() }
        #expect(try await seen.value(timeout: .seconds(10)) == "now not_reachable, was unknown")
    }

    @Test("a session that waits for connectivity: the observer compiles and a reachable server answers at once")
    func waitingSession() async throws {
        let server = try await TestServer.start()
        @Sendable func print(_ line: String) { Issue.record("no wait expected for a loopback server: \(line)") }
        var configuration = SessionConfiguration()
        configuration.waitsForConnectivity = true
        let session = SessionManager(configuration: configuration)
        let waiting = session.notificationCenter.addObserver(for: .taskIsWaitingForConnectivity) { note in
            print("task \(note.userInfo.taskIdentifier) waits for a network: \(note.userInfo.error.message)")
        }
        defer { waiting.cancel() }
        let (_, response) = try await session.data(for: Request(url: server.url("/json")))
        #expect(response.statusCode == 200)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
