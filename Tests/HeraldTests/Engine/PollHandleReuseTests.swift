import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("Poll handles kept across transfers")
struct PollHandleReuseTests {
    /// Runs `count` GETs of `/json` one after another on `session` and returns their bodies.
    private static func sequentialGets(
        _ count: Int, on session: SessionManager, server: TestServer, headers: HTTPHeaders = [:]
    ) async throws -> [Data] {
        var bodies: [Data] = []
        for _ in 0..<count {
            let (body, response) = try await session.data(for: Request(url: server.url("/json"), headers: headers))
            #expect(response.statusCode == 200)
            bodies.append(body)
        }
        return bodies
    }

    @Test("a kept-alive connection's transfers start one poll handle again instead of opening one each")
    func keptAliveConnectionKeepsItsHandle() async throws {
        let fixture = try await SessionFixture.make()
        let bodies = try await Self.sequentialGets(5, on: fixture.session, server: fixture.server)
        #expect(bodies.allSatisfy { !$0.isEmpty && $0 == bodies[0] })
        #expect(fixture.server.statistics.acceptedConnections == 1)
        await fixture.session.engineBarrier()
        let counts = await fixture.session.poolCounts()
        // curl stops watching the socket when a transfer leaves it and asks for it again for the next one:
        // every start after the first found the handle kept.
        #expect(counts.socketsWatched >= 2)
        #expect(counts.pollHandlesOpened == 1)
        #expect(counts.sockets == 0)
        try await fixture.tearDown()
    }

    @Test("a socket closed after its transfer leaves its handle to the next socket with its number")
    func closedConnectionsStillPoll() async throws {
        let fixture = try await SessionFixture.make()
        let bodies = try await Self.sequentialGets(
            6, on: fixture.session, server: fixture.server, headers: ["Connection": "close"])
        #expect(bodies.allSatisfy { !$0.isEmpty && $0 == bodies[0] })
        #expect(fixture.server.statistics.acceptedConnections == 6)
        let counts = await fixture.session.poolCounts()
        #expect(counts.socketsWatched >= 6)
        #expect(counts.pollHandlesOpened <= counts.socketsWatched)
        #expect(counts.sockets == 0)
        try await fixture.tearDown()
    }

    @Test("sessions on one engine take over stopped handles; invalidating one leaves the other polling")
    func sessionsShareHandles() async throws {
        let first = try await SessionFixture.make()
        let second = try await SessionFixture.make()
        let close: HTTPHeaders = ["Connection": "close"]
        for _ in 0..<3 {
            // Each closed socket's number is free for the other session's next connection.
            _ = try await Self.sequentialGets(1, on: first.session, server: first.server, headers: close)
            _ = try await Self.sequentialGets(1, on: second.session, server: second.server, headers: close)
        }
        // A kept-alive connection in the second session, then the first session closes everything it has.
        _ = try await Self.sequentialGets(1, on: second.session, server: second.server)
        first.session.invalidate(cancelingTasks: true)
        try await first.recorder.waitForInvalidation()
        await first.session.engineBarrier()
        // The second session's kept connection is still watched when used again.
        let bodies = try await Self.sequentialGets(3, on: second.session, server: second.server)
        #expect(bodies.allSatisfy { !$0.isEmpty })
        #expect(second.server.statistics.acceptedConnections == 4)
        let counts = await second.session.poolCounts()
        #expect(counts.socketsWatched >= 4)
        #expect(counts.pollHandlesOpened <= counts.socketsWatched)
        #expect(counts.sockets == 0)
        try await first.server.shutdown()
        try await second.tearDown()
    }
}
