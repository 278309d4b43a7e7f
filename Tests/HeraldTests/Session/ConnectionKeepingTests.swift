import Foundation
import HeraldTesting
import Testing

@testable import Herald

@Suite("Connections kept between bursts")
struct ConnectionKeepingTests {
    /// Resumes `count` GETs at once to a barrier that answers them only when all have arrived, so each
    /// holds a connection of its own, and returns their metrics once all have completed.
    private static func burst(
        _ count: Int, key: String, on fixture: SessionFixture, completedBefore: Int
    ) async throws -> [TransferMetrics] {
        let url = fixture.server.url("/barrier/\(count)?key=\(key)")
        let tasks = try (0..<count).map { _ in try fixture.session.dataTask(with: Request(url: url)) }
        for task in tasks { task.resume() }
        try await fixture.recorder.waitForCompletions(completedBefore + count)
        let ids = Set(tasks.map(\.taskIdentifier))
        return fixture.recorder.completions.filter { ids.contains($0.taskIdentifier) }.compactMap(\.metrics)
    }

    @Test("bursts wider than the per-host limit: every burst after the first runs on the first one's connections")
    func queuedBurstsReuseConnections() async throws {
        let fixture = try await SessionFixture.make()
        let width = fixture.session.configuration.maximumConnectionsPerHost
        var ports: [Set<Int>] = []
        for round in 0..<4 {
            // Long enough that all 16 are waiting before the first answer, however slowly a loaded machine
            // resumes them: then the first round opens every connection the limit allows.
            let url = fixture.server.url("/delay/300")
            let tasks = try (0..<16).map { _ in try fixture.session.dataTask(with: Request(url: url)) }
            for task in tasks { task.resume() }
            try await fixture.recorder.waitForCompletions(16 * (round + 1))
            let ids = Set(tasks.map(\.taskIdentifier))
            let metrics = fixture.recorder.completions.filter { ids.contains($0.taskIdentifier) }.compactMap(\.metrics)
            ports.append(Set(metrics.compactMap(\.localPort)))
        }
        #expect(ports[0].count == width)
        #expect(ports.allSatisfy { $0 == ports[0] }, "\(ports.map(\.count))")
    }

    @Test("without a total limit, the connections of a burst stay open for the next one: no new handshakes")
    func burstsReuseConnections() async throws {
        let fixture = try await SessionFixture.make()
        let configuration = fixture.session.configuration
        let width = configuration.maximumConnectionsPerHost
        #expect(configuration.maximumConnectionsTotal == 0)

        let first = try await Self.burst(width, key: "first", on: fixture, completedBefore: 0)
        #expect(first.count == width)
        let firstPorts = Set(first.compactMap(\.localPort))
        #expect(firstPorts.count == width, "each request of the first burst had a connection of its own")

        let second = try await Self.burst(width, key: "second", on: fixture, completedBefore: width)
        #expect(second.count == width)
        #expect(second.allSatisfy { $0.connectionReused }, "\(second.map(\.connectionReused))")
        #expect(Set(second.compactMap(\.localPort)) == firstPorts)
    }

    @Test("a task suspended while it waits for a connection doesn't time out meanwhile, and runs when resumed")
    func suspendedWhileQueuedDoesNotTimeOut() async throws {
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 1
        configuration.timeoutIntervalForRequest = 2
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let server = fixture.server
        // The first task holds the only connection, its body waiting at a gate; then it is suspended. Its own
        // idle timeout is long: on a busy machine the suspension may come a while after the body stops.
        var held = Request(url: server.url("/bytes/100000?gate=held&gateAfter=1000"))
        held.timeoutInterval = 60
        let first = try fixture.session.dataTask(with: held)
        first.resume()
        try await server.waitForRequests(count: 1)
        first.suspend()
        // The second waits for that connection, suspended before it has one (curl can't pause it yet).
        let second = try fixture.session.dataTask(with: Request(url: server.url("/json")))
        second.resume()
        second.suspend()
        // More than twice the idle timeout, both suspended: neither completes.
        await #expect(throws: (any Error).self) {
            try await fixture.recorder.waitForCompletions(1, timeout: .seconds(5))
        }
        server.openGate("held")
        first.resume()
        // Resumed once the connection is free: waiting behind the first task's body counts against its 2 s idle
        // timeout, which a loaded machine (the sanitizers) could spend there.
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        second.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(30))
        #expect(first.error == nil)
        #expect(second.error == nil)
        #expect(fixture.recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a task suspended before it has a connection takes none: the running tasks behind it get theirs")
    func suspendedBeforeConnectionTakesNone() async throws {
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 1
        configuration.timeoutIntervalForRequest = 10
        let fixture = try await SessionFixture.make(
            configuration: configuration, serializer: DataResponseSerializer(), ownEngine: true)
        let server = fixture.server
        // Suspended before curl has given it a connection, so curl can't pause it yet. The loop thread is held
        // meanwhile, so that it carries out the start and the suspend together: free, it may run curl in between
        // and open a connection for the request, which a suspended exchange rightly keeps.
        let suspended = try fixture.session.dataTask(with: Request(url: server.url("/json?task=suspended")))
        await Self.holdingLoopThread(of: fixture.session) {
            suspended.resume()
            suspended.suspend()
        }
        // Each waits for the one connection; none may wait for the suspended task.
        let running = try (0..<3).map { index in
            try fixture.session.dataTask(with: Request(url: server.url("/json?task=running-\(index)")))
        }
        for task in running { task.resume() }
        try await fixture.recorder.waitForCompletions(3, timeout: .seconds(30))
        for task in running { #expect(task.error == nil, "\(String(describing: task.error))") }
        #expect(suspended.state == .suspended)
        #expect(server.requests(forPath: "/json").count == 3)
        suspended.resume()
        try await fixture.recorder.waitForCompletions(4, timeout: .seconds(30))
        #expect(suspended.error == nil)
        #expect(server.requests(forPath: "/json").count == 4)
        #expect(fixture.recorder.timeline(ofTask: suspended.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a task suspended before it has a connection counts the time it was suspended in its metrics' total")
    func suspendedBeforeConnectionCountsTheSuspension() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer(), ownEngine: true)
        // Suspended before curl has given it a connection, as above: the loop thread carries out the start and
        // the suspend together, so the transfer is taken out of curl and added again on resume.
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json?task=parked")))
        let started = ContinuousClock.now
        await Self.holdingLoopThread(of: fixture.session) {
            task.resume()
            task.suspend()
        }
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        // The task stays suspended while another request runs, whose answer the server holds back 300 ms: time
        // for the metrics to count, taken by an awaited event rather than a sleep.
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/bytes/1?headDelayMs=300")))
        task.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(30))
        let elapsed = ContinuousClock.now - started
        #expect(task.error == nil)
        let total = try #require(
            fixture.recorder.completions.first { $0.taskIdentifier == task.taskIdentifier }?.metrics?.total)
        // Before, libcurl's times started again when the transfer went back into curl: a few milliseconds.
        #expect(total >= 0.3, "total \(total) s")
        #expect(total <= Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18 + 0.01)
        try await fixture.tearDown()
    }

    /// Runs `body` while the loop thread of `session`'s engine is held, and lets it go after, whatever `body` did:
    /// the engine then carries out together what `body` sent it.
    private static func holdingLoopThread(of session: SessionManager, _ body: () -> Void) async {
        let loopHeld = DispatchSemaphore(value: 0)
        await withCheckedContinuation { continuation in
            session.engine.execute {
                continuation.resume()
                loopHeld.wait()
            }
        }
        defer { loopHeld.signal() }
        body()
    }
}
