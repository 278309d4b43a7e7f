import CUV
import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

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
        // every start after the first found the handle kept. (The first may find one too: the engine is shared
        // with other tests, whose sockets may have had the same number.)
        #expect(counts.socketsWatched >= 2)
        #expect(counts.pollHandlesOpened <= 1)
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

    @Test("the table gives a kept handle back for its own number only, and none for what libuv can't poll")
    func tableKeepsByNumber() throws {
        let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        defer { loop.deallocate() }
        #expect(uv_loop_init(loop) == 0)
        var sockets: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        defer { sockets.forEach { close($0) } }
        var handles = PollHandles()
        let takenFirst = handles.take(for: sockets[0], on: loop)
        let first = try #require(takenFirst)
        #expect(first.opened)
        handles.stop(first.handle, socket: sockets[0])
        let keptAfterStop = handles.stoppedCount
        #expect(keptAfterStop == 1)
        let takenOther = handles.take(for: sockets[1], on: loop)
        let other = try #require(takenOther)
        #expect(other.opened)
        #expect(other.handle != first.handle)
        let takenAgain = handles.take(for: sockets[0], on: loop)
        let again = try #require(takenAgain)
        #expect(!again.opened)
        #expect(again.handle == first.handle)
        let keptAfterTake = handles.stoppedCount
        #expect(keptAfterTake == 0)

        // epoll refuses a regular file, and a negative number is no descriptor at all.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-poll-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: path.path, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(at: path) }
        let file = open(path.path, O_RDONLY)
        #expect(file >= 0)
        defer { close(file) }
        let forFile = handles.take(for: file, on: loop)
        #expect(forFile == nil)
        let forNegative = handles.take(for: -1, on: loop)
        #expect(forNegative == nil)

        Engine.close(first.handle)
        Engine.close(other.handle)
        uv_run(loop, UV_RUN_DEFAULT)
        #expect(uv_loop_close(loop) == 0)
    }
}

/// The table of poll handles by socket number that the engine's kept handles and each multi handle's
/// polled ones share. The handles are only stored, never started, so plain allocations stand in for them.
@Suite("The poll-handle table")
struct PollHandleTableTests {
    @Test("holds one handle per number, replaces and removes it, and counts what it holds")
    func insertReplaceRemove() {
        let first = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        let second = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        let third = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        defer { [first, second, third].forEach { $0.deallocate() } }
        var table = PollHandleTable()
        #expect(table[7] == nil && table[-1] == nil && table.count == 0)
        #expect(table.insert(first, for: 7) == nil)
        #expect(table.insert(second, for: 2) == nil)
        #expect(table[7] == first && table[2] == second && table[3] == nil && table[1_000] == nil)
        #expect(table.count == 2)
        // Another handle for a held number replaces it and hands the old one back.
        #expect(table.insert(third, for: 7) == first)
        #expect(table[7] == third && table.count == 2)
        #expect(table.remove(7) == third)
        #expect(table.remove(7) == nil && table.remove(500) == nil && table.remove(-3) == nil)
        #expect(table[7] == nil && table.count == 1)
        // A negative number holds nothing: the handle comes back for the caller to close.
        #expect(table.insert(first, for: -1) == first)
        #expect(table.count == 1)
        #expect(table.insert(first, for: 0) == nil)
        let all = table.removeAll().sorted { $0.socket < $1.socket }
        #expect(all.map(\.socket) == [0, 2] && all.map(\.poll) == [first, second])
        #expect(table.count == 0 && table[0] == nil && table[2] == nil)
    }
}
