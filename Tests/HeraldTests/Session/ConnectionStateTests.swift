import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

extension RecordingObserver {
    /// `"1:active"`, `"1:idle"`, `"1:closed"` for each connection change recorded, in order.
    fileprivate var connectionTimeline: [String] {
        connectionChanges.map { "\($0.connectionIdentifier):\($0.state.rawValue)" }
    }

    /// Waits until `condition` holds for the connection changes recorded.
    fileprivate func waitForConnections(_ condition: @escaping @Sendable ([ConnectionStateChange]) -> Bool)
        async throws
    {
        try await waitUntil { events in condition(events.compactMap(\.connectionChange)) }
    }
}

@Suite("Connection states: established, active, idle, closed")
struct ConnectionStateTests {
    @Test("requests one at a time keep one connection: active, idle, again, then closed before the invalidation")
    func oneConnectionOneAtATime() async throws {
        let fixture = try await SessionFixture.make()
        let recorder = RecordingObserver(center: fixture.center, recordsConnections: true)
        defer { recorder.cancel() }
        for _ in 0..<3 {
            let (_, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
            #expect(response.statusCode == 200)
            // The connection is idle again before the next request starts.
            try await recorder.waitForConnections { $0.last?.state == .idle }
        }
        await fixture.session.invalidateAndWait()
        #expect(
            recorder.connectionTimeline == [
                "1:active", "1:idle", "1:active", "1:idle", "1:active", "1:idle", "1:closed",
            ])
        // The closing is announced before the invalidation, last of all.
        #expect(recorder.events.last?.kind == .invalidate)
        #expect(recorder.events.dropLast().last?.connectionChange?.state == .closed)
        let changes = recorder.connectionChanges
        #expect(changes.map(\.previousState) == [nil, .active, .idle, .active, .idle, .active, .idle])
        #expect(changes.map(\.activeConnections) == [1, 0, 1, 0, 1, 0, 0])
        #expect(changes.map(\.idleConnections) == [0, 1, 0, 1, 0, 1, 0])
        let port = fixture.server.port
        for change in changes {
            #expect(change.sessionIdentifier == fixture.session.identifier)
            #expect(change.scheme == "http")
            #expect(change.host == "127.0.0.1")
            #expect(change.port == port)
            #expect(change.peerAddress == "127.0.0.1")
            #expect(change.peerPort == port)
        }
        // Known from the first response on.
        #expect(changes.first?.protocolVersion == nil)
        #expect(changes.dropFirst().allSatisfy { $0.protocolVersion == "1.1" })
        // The age only grows.
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.age <= $1.age })
        #expect(fixture.server.statistics.acceptedConnections == 1)
        // Each task's metrics name the connection that carried it.
        #expect(fixture.recorder.completions.map { $0.metrics?.connectionIdentifier } == [1, 1, 1])
        try await fixture.server.shutdown()
    }

    @Test("two requests held at once under a limit of two: two connections, both active, then both idle")
    func twoConnectionsAtOnce() async throws {
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = 2
        let fixture = try await SessionFixture.make(configuration: configuration)
        let recorder = RecordingObserver(center: fixture.center, recordsConnections: true)
        defer { recorder.cancel() }
        // The server answers neither until both wait: each needs a connection of its own.
        let url = fixture.server.url("/barrier/2?key=connections")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<2 {
                group.addTask { try await fixture.session.data(for: Request(url: url)).1.statusCode }
            }
            for try await status in group { #expect(status == 200) }
        }
        try await recorder.waitForConnections { changes in changes.filter { $0.state == .idle }.count == 2 }
        let changes = recorder.connectionChanges
        #expect(Set(changes.map(\.connectionIdentifier)) == [1, 2])
        #expect(changes.filter { $0.state == .active }.map(\.activeConnections).sorted() == [1, 2])
        #expect(changes.last.map { ($0.activeConnections, $0.idleConnections) } ?? (-1, -1) == (0, 2))
        await fixture.session.invalidateAndWait()
        let closed = recorder.connectionChanges.filter { $0.state == .closed }
        #expect(closed.count == 2)
        #expect(closed.last.map { ($0.activeConnections, $0.idleConnections) } ?? (-1, -1) == (0, 0))
        try await fixture.server.shutdown()
    }

    @Test("a response with Connection: close closes its connection while its request is still on it")
    func serverClosesConnection() async throws {
        let fixture = try await SessionFixture.make()
        let recorder = RecordingObserver(center: fixture.center, recordsConnections: true)
        defer { recorder.cancel() }
        var request = Request(url: fixture.server.url("/json"))
        // The server answers `Connection: close` to a request that asks for it, and closes.
        request.headers.add(name: "Connection", value: "close")
        let (_, response) = try await fixture.session.data(for: request)
        #expect(response.statusCode == 200)
        try await recorder.waitForConnections { $0.last?.state == .closed }
        #expect(recorder.connectionTimeline == ["1:active", "1:closed"])
        let closed = recorder.connectionChanges.last
        #expect(closed?.previousState == .active)
        #expect(closed?.protocolVersion == "1.1")
        #expect(closed.map { ($0.activeConnections, $0.idleConnections) } ?? (-1, -1) == (0, 0))
        // The next request opens a new one.
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        try await recorder.waitForConnections { $0.last?.state == .idle }
        #expect(recorder.connectionTimeline == ["1:active", "1:closed", "2:active", "2:idle"])
        try await fixture.tearDown()
    }

    @Test("a connection attempt that fails is never announced")
    func refusedConnection() async throws {
        let fixture = try await SessionFixture.make()
        let recorder = RecordingObserver(center: fixture.center, recordsConnections: true)
        defer { recorder.cancel() }
        let closed = try RefusingPort()
        defer { closed.close() }
        let url = closed.url("/json")
        await #expect(throws: HeraldError.self) { try await fixture.session.data(for: Request(url: url)) }
        // A request that does connect afterwards is connection 2: the failed attempt had a socket, not a
        // connection anyone saw.
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        try await recorder.waitForConnections { $0.last?.state == .idle }
        #expect(recorder.connectionTimeline.allSatisfy { $0.hasSuffix(":active") || $0.hasSuffix(":idle") })
        #expect(Set(recorder.connectionChanges.map(\.port)) == [fixture.server.port])
        // The failed task had no connection; the next one names its own.
        try await fixture.recorder.waitForCompletions(2)
        let numbers = fixture.recorder.completions.map { $0.metrics.map { $0.connectionIdentifier ?? -1 } }
        #expect(numbers.first == .some(-1) || numbers.first == .some(nil), "\(numbers)")
        #expect(numbers.last == .some(recorder.connectionChanges.first?.connectionIdentifier ?? 0))
        try await fixture.tearDown()
    }

    @Test("nothing is built or posted for connections when nobody observes them")
    func unobserved() async throws {
        let fixture = try await SessionFixture.make()
        #expect(!fixture.center.hasObservers(for: .connectionDidChangeState))
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        // An observer added afterwards hears the changes from then on, with the counts as they are.
        let recorder = RecordingObserver(center: fixture.center, recordsConnections: true)
        defer { recorder.cancel() }
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        try await recorder.waitForConnections { $0.last?.state == .idle }
        #expect(recorder.connectionTimeline == ["1:active", "1:idle"])
        #expect(recorder.connectionChanges.first?.previousState == .idle)
        try await fixture.tearDown()
    }
}
