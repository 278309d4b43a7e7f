import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Time in queue")
struct TimeInQueueTests {
    /// With one connection per host, a second request to the host waits until the first one's connection is
    /// free. Its `timeInQueue` covers at least the stretch the test is sure it waited: from after a request to
    /// another host (resumed after it, so added to the pool after it) completed, until the test let the first
    /// response finish. The test makes that stretch last a full request to the other host, so a wait not
    /// measured (0, or `nil`) fails; however slow the machine, the bound holds.
    @Test("a request waiting for the host's one connection reports the wait in timeInQueue")
    func queuedRequestReportsItsWait() async throws {
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = 1
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let other = try await TestServer.start()
        let clock = ContinuousClock()

        // The first request holds the host's only connection: its body waits at the gate.
        let holding = try fixture.session.dataTask(with: Request(url: fixture.server.url("/events/1?gate=hold")))
        holding.resume()
        try await fixture.server.waitForRequests(count: 1)
        let queued = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        queued.resume()
        // Resumed after `queued`, so added to the pool after it; done, so `queued` was in the pool by then.
        try fixture.session.dataTask(with: Request(url: other.url("/json"))).resume()
        try await fixture.recorder.waitForCompletions(1)
        let sure = clock.now
        try fixture.session.dataTask(with: Request(url: other.url("/json"))).resume()
        try await fixture.recorder.waitForCompletions(2)
        let released = clock.now
        fixture.server.openGate("hold")
        try await fixture.recorder.waitForCompletions(4)

        let first = try #require(fixture.recorder.completions.first { $0.taskIdentifier == holding.taskIdentifier })
        let second = try #require(fixture.recorder.completions.first { $0.taskIdentifier == queued.taskIdentifier })
        #expect(first.error == nil)
        #expect(second.error == nil)
        let firstWait = try #require(first.metrics?.timeInQueue)
        let secondWait = try #require(second.metrics?.timeInQueue)
        let stretch = released - sure
        let seconds = Double(stretch.components.seconds) + Double(stretch.components.attoseconds) / 1e18
        // curl's times are whole microseconds: a few of them of slack, never more.
        #expect(secondWait + 0.00001 >= seconds, "waited \(secondWait) s, sure of \(seconds) s")
        // Reported, not asserted: timing never fails a test.
        print("time in queue: holding \(firstWait) s, queued \(secondWait) s (sure of \(seconds) s)")
        try await other.shutdown()
        try await fixture.tearDown()
    }

    /// libcurl starts a destination's waiting transfers one at a time once its connection failed, each with a
    /// connect timeout of its own; over `https` the others wait for the first connection to multiplex on it.
    @Test("requests resumed together to an https server that never answers all time out at once, not in turn")
    func silentServerTimesOutTogether() async throws {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = 2
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        // Listening, never accepting: connections are made, and no TLS handshake is ever answered.
        let (listener, port) = try BlockingSocket.listenOnLoopback()
        defer { close(listener) }
        let url = try #require(URL(string: "https://127.0.0.1:\(port)/silent"))
        let started = ContinuousClock.now
        for _ in 0..<8 { try fixture.session.dataTask(with: Request(url: url)).resume() }
        let completions = try await fixture.recorder.waitForCompletions(8, timeout: .seconds(60))
        let elapsed = ContinuousClock.now - started
        #expect(completions.filter { $0.kind == .complete }.count == 8)
        #expect(fixture.recorder.completions.allSatisfy { $0.error?.code == .timedOut })
        // In turn, the last failed 16 s after the first was resumed.
        #expect(elapsed < .seconds(10), "took \(elapsed)")
        try await fixture.tearDown()
    }

    @Test(
        "a request waiting for a connection while another request has one is not idle, whatever it waits behind",
        arguments: ["the total limit, for another origin", "a connection that then closes"])
    func waitBehindAnotherIsNotIdle(behind: String) async throws {
        let underTotalLimit = behind.hasPrefix("the total limit")
        var configuration = SessionConfiguration.default
        if underTotalLimit {
            configuration.maximumConnectionsTotal = 1
        } else {
            configuration.maximumConnectionsPerHost = 1
        }
        configuration.timeoutIntervalForRequest = 2
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let other = try await TestServer.start()
        // 100 bytes every 100 ms for about 4 s: the only connection all along, never silent for 2 s. Under the total
        // limit the waiting request's origin has no connection of its own; behind a connection that closes, it
        // needs one of its own, long after it joined.
        let busy = try fixture.session.dataTask(
            with: Request(
                url: fixture.server.url("/bytes/4000?chunkSize=100&delayMs=100"),
                headers: underTotalLimit ? [:] : ["Connection": "close"]))
        busy.resume()
        try await fixture.server.waitForRequests(count: 1)
        let queued = try fixture.session.dataTask(
            with: Request(url: (underTotalLimit ? other : fixture.server).url("/json")))
        queued.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(60))
        #expect(busy.error == nil, "\(String(describing: busy.error))")
        #expect(queued.error == nil, "\(String(describing: queued.error))")
        #expect(queued.response?.statusCode == 200)
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("a request that never got a response byte has no time in queue")
    func noResponseNoQueueTime() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let closed = try RefusingPort()
        defer { closed.close() }
        let url = closed.url("/json")
        try fixture.session.dataTask(with: Request(url: url)).resume()
        try await fixture.recorder.waitForCompletions(1)
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error?.code == .cannotConnect)
        #expect(completion.metrics != nil)
        #expect(completion.metrics?.timeInQueue == nil)
        try await fixture.tearDown()
    }

    @Test("a request waiting for the host's one connection is not idle: the request timeout counts from its connection")
    func waitForAConnectionIsNotIdle() async throws {
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = 1
        configuration.timeoutIntervalForRequest = 2
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        // 100 bytes every 100 ms for about 4 s: the host's only connection all along, never silent for 2 s (with
        // room for a loaded machine's pauses).
        let slow = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/4000?chunkSize=100&delayMs=100")))
        slow.resume()
        try await fixture.server.waitForRequests(count: 1)
        let queued = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        queued.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(60))
        // Before, it failed with timedOut two seconds after it was resumed, having sent nothing.
        #expect(queued.error == nil, "\(String(describing: queued.error))")
        #expect(queued.response?.statusCode == 200)
        try await fixture.tearDown()
    }
}
