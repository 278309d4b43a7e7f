import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import MetricsTestKit
import Testing

/// `http.client.open_connections` and `http.client.connection.duration`, from `connectionDidChangeState`.
@Suite("Metrics observer: the connection pool")
struct ConnectionMetricsTests {
    static let url = URL(string: "https://api.example.com:8443/items")!

    /// `http.client.open_connections`' dimensions for a state, to api.example.com:8443 through 127.0.0.1.
    static func pool(_ state: String, peer: String = "127.0.0.1") -> [(String, String)] {
        [
            ("http.connection.state", state), ("server.address", "api.example.com"), ("server.port", "8443"),
            ("network.peer.address", peer),
        ]
    }

    @Test("active and idle follow the sessions' counts, summed over sessions; a closed connection is timed")
    func countsAndDuration() throws {
        let metrics = TestMetrics()
        let observer = MetricsObserver(factory: metrics)
        let url = Self.url
        // Session 1: a connection established, a second one beside it, the first one idle.
        observer.connectionDidChangeState(Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: url))
        let active = try metrics.expectMeter(MetricsObserver.Name.openConnections, Self.pool("active"))
        #expect(active.lastValue == 1)
        observer.connectionDidChangeState(
            Payloads.connection(.active, previous: nil, active: 2, idle: 0, url: url, connection: 2))
        observer.connectionDidChangeState(Payloads.connection(.idle, previous: .active, active: 1, idle: 1, url: url))
        let idle = try metrics.expectMeter(MetricsObserver.Name.openConnections, Self.pool("idle"))
        #expect((active.lastValue, idle.lastValue) == (1, 1))
        // Session 2, same origin and peer: its connection adds to the same series.
        observer.connectionDidChangeState(
            Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: url, session: 2))
        #expect((active.lastValue, idle.lastValue) == (2, 1))
        // Session 1's idle connection closes after 2.5 s.
        observer.connectionDidChangeState(
            Payloads.connection(.closed, previous: .idle, active: 1, idle: 0, url: url, age: 2.5))
        #expect((active.lastValue, idle.lastValue) == (2, 0))
        let timer = try metrics.expectTimer(
            MetricsObserver.Name.connectionDuration,
            [
                ("server.address", "api.example.com"), ("server.port", "8443"), ("network.peer.address", "127.0.0.1"),
                ("network.protocol.version", "2"),
            ])
        #expect(timer.values == [2_500_000_000])
        #expect(timer.displayUnit == .seconds)
        // Everything closes.
        observer.connectionDidChangeState(
            Payloads.connection(.closed, previous: .active, active: 0, idle: 0, url: url, connection: 2))
        observer.connectionDidChangeState(
            Payloads.connection(.closed, previous: .active, active: 0, idle: 0, url: url, session: 2))
        #expect((active.lastValue, idle.lastValue) == (0, 0))
        #expect(timer.values.count == 3)
        #expect(active.values.allSatisfy { $0 >= 0 } && idle.values.allSatisfy { $0 >= 0 })
    }

    @Test("an observer added while connections are open counts them from their next change, never below zero")
    func lateObserver() throws {
        let metrics = TestMetrics()
        let observer = MetricsObserver(factory: metrics)
        // The session already had two connections, one of them active: its first change the observer sees
        // makes both idle.
        observer.connectionDidChangeState(
            Payloads.connection(.idle, previous: .active, active: 0, idle: 2, url: Self.url))
        let idle = try metrics.expectMeter(MetricsObserver.Name.openConnections, Self.pool("idle"))
        #expect(idle.lastValue == 2)
        // A change with the same counts (one it has already applied, or of a connection of another peer
        // reported twice) moves nothing.
        observer.connectionDidChangeState(
            Payloads.connection(.idle, previous: .active, active: 0, idle: 2, url: Self.url))
        #expect(idle.lastValue == 2)
        observer.connectionDidChangeState(
            Payloads.connection(.closed, previous: .idle, active: 0, idle: 1, url: Self.url))
        observer.connectionDidChangeState(
            Payloads.connection(.closed, previous: .idle, active: 0, idle: 0, url: Self.url, connection: 2))
        #expect(idle.lastValue == 0)
        #expect(idle.values.allSatisfy { $0 >= 0 })
    }

    @Test("peer addresses are bounded like server addresses, and server.address can be left out")
    func bounded() throws {
        let metrics = TestMetrics()
        var configuration = MetricsObserver.Configuration()
        configuration.maximumServerAddresses = 1
        let observer = MetricsObserver(factory: metrics, configuration: configuration)
        observer.connectionDidChangeState(
            Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: Self.url, peer: "10.0.0.1"))
        observer.connectionDidChangeState(
            Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: Self.url, peer: "10.0.0.2"))
        #expect(
            try metrics.expectMeter(MetricsObserver.Name.openConnections, Self.pool("active", peer: "10.0.0.1"))
                .lastValue == 1)
        #expect(
            try metrics.expectMeter(MetricsObserver.Name.openConnections, Self.pool("active", peer: "_OTHER")).lastValue
                == 1)

        let anonymous = TestMetrics()
        var without = MetricsObserver.Configuration()
        without.includesServerAddress = false
        // Kept alive while the meter is read: a released observer takes its counts back.
        let anonymousObserver = MetricsObserver(factory: anonymous, configuration: without)
        anonymousObserver.connectionDidChangeState(
            Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: Self.url, peer: nil))
        let meter = try anonymous.expectMeter(
            MetricsObserver.Name.openConnections, [("http.connection.state", "active")])
        #expect(meter.lastValue == 1)
        withExtendedLifetime(anonymousObserver) {}
    }

    @Test("a real session: one kept connection idle between requests, timed once it closes with the session")
    func realSession() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        let metrics = TestMetrics()
        let token = MetricsObserver(factory: metrics).observe(center)
        defer { token.cancel() }
        // Registered last: once it has seen a change, so has the metrics observer.
        let recorder = RecordingObserver(center: center, recordsConnections: true)
        let port = String(server.port)
        let pool = { (state: String) -> [(String, String)] in
            [
                ("http.connection.state", state), ("server.address", "127.0.0.1"), ("server.port", port),
                ("network.peer.address", "127.0.0.1"),
            ]
        }
        for expected in 1...3 {
            _ = try await session.data(for: Request(url: server.url("/json")))
            try await recorder.waitUntil { events in
                events.filter { $0.connectionChange?.state == .idle }.count == expected
            }
            #expect(try metrics.expectMeter(MetricsObserver.Name.openConnections, pool("idle")).lastValue == 1)
            #expect(try metrics.expectMeter(MetricsObserver.Name.openConnections, pool("active")).lastValue == 0)
        }
        await session.invalidateAndWait()
        #expect(try metrics.expectMeter(MetricsObserver.Name.openConnections, pool("idle")).lastValue == 0)
        let timers = metrics.timers(label: MetricsObserver.Name.connectionDuration)
        #expect(timers.count == 1)
        let timer = try #require(timers.first)
        #expect(timer.values.count == 1)
        #expect(timer.values.allSatisfy { $0 > 0 })
        #expect(timer.dimensions.first { $0.0 == "network.protocol.version" }?.1 == "1.1")
        #expect(timer.dimensions.first { $0.0 == "network.peer.address" }?.1 == "127.0.0.1")
        try await server.shutdown()
    }
}
