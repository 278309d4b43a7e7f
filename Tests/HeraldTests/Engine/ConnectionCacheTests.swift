import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("Connections kept between bursts")
struct ConnectionCacheTests {
    /// Runs `count` GETs of `/barrier/{count}` at once: the server answers none until all wait, so each
    /// needs its own connection.
    private static func burst(_ count: Int, key: String, on fixture: SessionFixture) async throws {
        let url = fixture.server.url("/barrier/\(count)?key=\(key)")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask { try await fixture.session.data(for: Request(url: url)).1.statusCode }
            }
            for try await status in group { #expect(status == 200) }
        }
    }

    @Test("with a total limit, every connection the limit allows stays open while fewer transfers run")
    func quietSpellKeepsConnections() async throws {
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = 8
        configuration.maximumConnectionsTotal = 8
        let fixture = try await SessionFixture.make(configuration: configuration)
        try await Self.burst(8, key: "first", on: fixture)
        #expect(fixture.server.statistics.acceptedConnections == 8)
        // One transfer at a time: curl's own rule would keep four connections per transfer running.
        for _ in 0..<3 {
            let (_, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
            #expect(response.statusCode == 200)
        }
        try await Self.burst(8, key: "second", on: fixture)
        #expect(fixture.server.statistics.acceptedConnections == 8)
        #expect(fixture.server.openConnections == 8)
        try await fixture.tearDown()
    }
}
