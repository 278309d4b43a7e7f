import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Server-sent events: events(for:) and reconnection with Last-Event-ID")
struct EventSourceTests {
    @Test("invalidating the session while the sequence waits to reconnect ends it at once with sessionInvalidated")
    func invalidatedWhileWaiting() async throws {
        let fixture = try await SessionFixture.make()
        // Dropped after its first event, the stream asks for a minute before the next connection.
        let events = fixture.session.events(for: Request(url: fixture.server.url("/events/3?dropEvery=1&retry=60000")))
        let reading = Task { try await readAll(events, timeout: .seconds(30)) }
        // The first connection ends once the server drops it; a sanitizer's slowdown can take seconds over that.
        _ = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        fixture.session.invalidate(cancelingTasks: true)
        let (received, error) = try await reading.value
        #expect(received.map(\.id) == ["1"])
        #expect(error?.code == .sessionInvalidated)
        try await fixture.tearDown()
    }

    @Test("the wait before reconnecting: the stream's retry, then from the second failure in a row a doubling backoff")
    func reconnectionBackoff() {
        let hour = Duration.seconds(3600)
        func delay(_ retry: Duration, _ failures: Int) -> Duration {
            EventSourceConnection.reconnectionDelay(retry: retry, failuresInARow: failures, maximum: hour)
        }
        #expect(delay(.zero, 0) == .zero)
        #expect(delay(.zero, 1) == .zero)
        #expect(delay(.zero, 2) == .milliseconds(100))
        #expect(delay(.zero, 3) == .milliseconds(200))
        #expect(delay(.zero, 4) == .milliseconds(400))
        #expect(delay(.seconds(3), 1) == .seconds(3))
        #expect(delay(.seconds(3), 2) == .seconds(3))
        #expect(delay(.seconds(3), 3) == .seconds(6))
        #expect(delay(.seconds(3), 40) == hour)
        #expect(delay(.seconds(7200), 0) == hour)
        #expect(delay(.milliseconds(1), 10_000) == hour)
    }

    @Test("a server that closes every stream at once without an event, asking retry 0, is backed off, not hammered")
    func emptyStreamsBackOff() async throws {
        let fixture = try await SessionFixture.make()
        let reconnections = ReconnectionLog(center: fixture.center)
        // Each connection: 200, `retry: 0`, then the end of the response.
        let events = fixture.session.events(for: Request(url: fixture.server.url("/events/0?retry=0")))
        let reading = readUntilEnd(events)
        // Each reconnection's delay doubles from 100 ms once two connections in a row gave nothing. Waited for by
        // the request each one leads to; a connection slower than a second on a loaded machine starts the count
        // again, which only takes a little longer.
        try await fixture.server.waitUntil(timeout: .seconds(30)) { _ in
            reconnections.all.contains { $0.delay >= 0.4 }
        }
        reading.cancel()
        #expect(await reading.value?.code == .cancelled)
        let delays = reconnections.all.map(\.delay)
        // Before, every reconnection came at once, thousands a second, for as long as the sequence was read.
        #expect(delays.first == 0)
        #expect(delays.count <= 16, "\(delays)")
        #expect(fixture.server.requests(forPath: "/events/0").count <= 17)
        // Every wait is the stream's retry (0), or a step of the doubling backoff.
        #expect(delays.allSatisfy { [0, 0.1, 0.2, 0.4, 0.8, 1.6].contains($0) }, "\(delays)")
        try await fixture.tearDown()
    }

    @Test("a server polled for news, answering an empty stream each time, is asked again after its retry, not later")
    func polledServerKeepsItsRetry() async throws {
        let fixture = try await SessionFixture.make()
        let reconnections = ReconnectionLog(center: fixture.center)
        // The default reconnection time is below the stream's retry: the backoff stops at the retry.
        let options = EventSourceOptions(defaultReconnectionTime: .milliseconds(50))
        let events = fixture.session.events(
            for: Request(url: fixture.server.url("/events/0?retry=150")), options: options)
        let reading = readUntilEnd(events)
        try await fixture.server.waitForRequests(count: 7, timeout: .seconds(30))
        reading.cancel()
        #expect(await reading.value?.code == .cancelled)
        // Before the cap, the waits grew 0.15, 0.15, 0.3, 0.6, 1.2 s, … toward an hour: news arrived that late.
        let delays = reconnections.all.map(\.delay)
        #expect(delays.count >= 6 && delays.allSatisfy { abs($0 - 0.15) < 1e-9 }, "\(delays)")
        try await fixture.tearDown()
    }

    @Test("a stream dropped mid-event twice: every event exactly once, in order, each reconnection after retry ms")
    func reconnectsWithLastEventID() async throws {
        let fixture = try await SessionFixture.make()
        let reconnections = ReconnectionLog(center: fixture.center)
        let retry = 50
        let events = fixture.session.events(
            for: Request(url: fixture.server.url("/events/10?dropEvery=4&retry=\(retry)&size=64")))
        let (received, error) = try await readAll(events)
        #expect(error == nil)
        #expect(received.map(\.id) == (1...10).map(String.init))
        #expect(
            received.allSatisfy { $0.event == "tick" && $0.data.hasPrefix("\($0.id) ") && $0.data.utf8.count == 64 })
        // Three connections served events (dropped after 4 and after 8, ended normally after 10); the fourth,
        // asking from 10, got 204 and ended the sequence.
        let requests = fixture.server.requests(forPath: "/events/10")
        #expect(requests.map { $0.headerValue("Last-Event-ID") } == [nil, "4", "8", "10"])
        #expect(requests.allSatisfy { $0.headerValue("Accept") == "text/event-stream" })
        // What Fetch sends for EventSource's "no-store" cache mode.
        #expect(requests.allSatisfy { $0.headerValue("Cache-Control") == "no-cache" })
        #expect(requests.allSatisfy { $0.headerValue("Pragma") == "no-cache" })
        for (earlier, later) in zip(requests, requests.dropFirst()) {
            // The connection ended after its request arrived, and the next waited `retry` ms after that.
            #expect(later.receivedAt - earlier.receivedAt >= .milliseconds(retry))
        }
        _ = try await fixture.recorder.waitForCompletions(4)
        let log = reconnections.all
        #expect(log.map(\.lastEventID) == ["4", "8", "10"])
        #expect(log.map(\.attempt) == [2, 3, 4])
        #expect(log.allSatisfy { abs($0.delay - Double(retry) / 1000) < 1e-9 })
        #expect(log.prefix(2).allSatisfy { $0.error != nil })
        #expect(log.last?.error == nil)
        // Each connection is a task of its own, announced as every task is.
        #expect(fixture.recorder.events.filter { $0.kind == .resume }.count == 4)
        #expect(fixture.recorder.completions.count == 4)
        try await fixture.tearDown()
    }

    @Test("a wrong content type ends the sequence with unacceptableContentType, without reconnecting")
    func wrongContentType() async throws {
        let fixture = try await SessionFixture.make()
        let (received, error) = try await readAll(
            fixture.session.events(for: Request(url: fixture.server.url("/text"))))
        #expect(received.isEmpty)
        #expect(error?.code == .unacceptableContentType)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("a refused connection's task completes with the refusal, not as cancelled: observers see why it ended")
    func refusedConnectionCompletesWithRefusal() async throws {
        let fixture = try await SessionFixture.make()
        // A body that stops after its first kilobyte (its gate is never opened): the refusal, not the body's end,
        // ends the transfer.
        let url = fixture.server.url("/bytes/100000?gate=event-stream-refused&gateAfter=1024")
        let (received, error) = try await readAll(fixture.session.events(for: Request(url: url)))
        #expect(received.isEmpty)
        #expect(error?.code == .unacceptableContentType)
        try await fixture.recorder.waitForCompletions(1)
        // Before, the task the sequence dropped completed as cancelled, which no caller asked for.
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error?.code == .unacceptableContentType, "\(String(describing: completion.error))")
        #expect(completion.response?.statusCode == 200)
        try await fixture.tearDown()
    }

    @Test("a stream is asked for without a content coding, and one that comes in gzip ends the sequence, unparsed")
    func contentCoding() async throws {
        var configuration = SessionConfiguration.default
        // Harmless for other requests, whose bodies libcurl decodes; a stream's would be parsed as gzip bytes.
        configuration.httpAdditionalHeaders = ["Accept-Encoding": "gzip"]
        let fixture = try await SessionFixture.make(configuration: configuration)
        let quick = EventSourceOptions(defaultReconnectionTime: .milliseconds(10))
        let (events, _) = try await readAll(
            fixture.session.events(for: Request(url: fixture.server.url("/events/2")), options: quick))
        #expect(events.count == 2)
        #expect(fixture.server.requests(forPath: "/events/2").first?.headerValue("Accept-Encoding") == "identity")

        let url = fixture.server.url("/headers?Content-Type=text%2Fevent-stream&Content-Encoding=gzip")
        let (received, error) = try await readAll(fixture.session.events(for: Request(url: url)))
        #expect(received.isEmpty)
        #expect(error?.code == .unacceptableContentType)
        #expect(fixture.server.requests(forPath: "/headers").count == 1)
        try await fixture.tearDown()
    }

    @Test("a proxy that fails is a network error: the stream reconnects, up to its limit of failed connections")
    func proxyFailureReconnects() async throws {
        let server = try await TestServer.start()
        var configuration = SessionConfiguration.default
        // The test server as an HTTPS proxy: it answers the TLS handshake with plain HTTP, so each connection
        // fails with `proxy`.
        configuration.proxy = Proxy(kind: .https, host: "127.0.0.1", port: server.port)
        let fixture = try await SessionFixture.make(configuration: configuration)
        let reconnections = ReconnectionLog(center: fixture.center)
        let options = EventSourceOptions(defaultReconnectionTime: .milliseconds(10), maximumConsecutiveFailures: 3)
        let (received, error) = try await readAll(
            fixture.session.events(for: Request(url: fixture.server.url("/events/2")), options: options))
        #expect(received.isEmpty)
        #expect(error?.code == .proxy, "\(String(describing: error))")
        // Before, the first failure ended the sequence.
        #expect(reconnections.all.count == 2)
        #expect(reconnections.all.allSatisfy { $0.error?.code == .proxy })
        try await fixture.tearDown()
        try await server.shutdown()
    }

    @Test("a Last-Event-ID of the caller's goes with the first connection: the stream goes on from the event after it")
    func callersLastEventID() async throws {
        let fixture = try await SessionFixture.make()
        var request = Request(url: fixture.server.url("/events/5"))
        request.headers.replaceOrAdd(name: "Last-Event-ID", value: "3")
        let (received, error) = try await readAll(fixture.session.events(for: request), timeout: .seconds(30))
        // The stream ends after event 5; the reconnection sends "5" and gets 204, which ends the sequence.
        #expect(error == nil)
        #expect(received.map(\.id) == ["4", "5"])
        let sent = fixture.server.requests(forPath: "/events/5").map { $0.headerValue("Last-Event-ID") }
        #expect(sent == ["3", "5"])
        try await fixture.tearDown()
    }

    @Test("204 No Content ends the sequence without an error")
    func noContentEnds() async throws {
        let fixture = try await SessionFixture.make()
        let (received, error) = try await readAll(
            fixture.session.events(for: Request(url: fixture.server.url("/status/204"))))
        #expect(received.isEmpty)
        #expect(error == nil)
        #expect(fixture.server.requestCount == 1)
        // The server ended the stream: its task succeeded, it was not cancelled by the sequence's end.
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.map { $0.error?.code } == [nil])
        #expect(fixture.recorder.completions.first?.response?.statusCode == 204)
        try await fixture.tearDown()
    }

    @Test("another status ends the sequence with unacceptableStatusCode, without reconnecting")
    func errorStatus() async throws {
        let fixture = try await SessionFixture.make()
        let (_, error) = try await readAll(fixture.session.events(for: Request(url: fixture.server.url("/status/500"))))
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.statusCode == 500)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("failed connections in a row up to the limit, then the last error")
    func failureLimit() async throws {
        let fixture = try await SessionFixture.make()
        let options = EventSourceOptions(defaultReconnectionTime: .milliseconds(10), maximumConsecutiveFailures: 3)
        let (_, error) = try await readAll(
            fixture.session.events(
                for: Request(url: fixture.server.url("/fault/reset-before-headers")), options: options))
        #expect(error != nil)
        #expect(fixture.server.requestCount == 3)
        try await fixture.tearDown()
    }

    @Test("an event over maximumEventSize ends the sequence with responseTooLarge, without reconnecting")
    func oversizeEvent() async throws {
        let fixture = try await SessionFixture.make()
        let options = EventSourceOptions(defaultReconnectionTime: .milliseconds(10), maximumEventSize: 100)
        // A stream far longer than its buffer: still running when the long event is found.
        let (received, error) = try await readAll(
            fixture.session.events(for: Request(url: fixture.server.url("/events/100000?size=200")), options: options))
        #expect(received.isEmpty)
        #expect(error?.code == .responseTooLarge)
        #expect(error?.message.contains("longer than 100 bytes") == true)
        #expect(fixture.server.requestCount == 1)
        // The connection was stopped: its task completes with the error, as every task does. Before, as cancelled.
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error?.code == .responseTooLarge)
        try await fixture.tearDown()
    }

    @Test("a retry longer than maximumReconnectionTime waits that long instead")
    func reconnectionTimeCapped() async throws {
        let fixture = try await SessionFixture.make()
        let reconnections = ReconnectionLog(center: fixture.center)
        // The server asks for ten minutes between connections.
        let options = EventSourceOptions(maximumReconnectionTime: .milliseconds(20))
        let (received, error) = try await readAll(
            fixture.session.events(
                for: Request(url: fixture.server.url("/events/4?dropEvery=2&retry=600000&size=16")), options: options))
        #expect(error == nil)
        #expect(received.map(\.id) == ["1", "2", "3", "4"])
        _ = try await fixture.recorder.waitForCompletions(3)
        let log = reconnections.all
        #expect(log.count == 2)
        #expect(log.allSatisfy { abs($0.delay - 0.02) < 1e-9 })
        try await fixture.tearDown()
    }

    @Test("cancelling the iterating task ends the stream with cancelled, and its connection")
    func cancelIteration() async throws {
        let fixture = try await SessionFixture.make()
        let events = fixture.session.events(for: Request(url: fixture.server.url("/events/100000000?size=1024")))
        let first = OneShot<Void>()
        let consumer = Task { () -> HeraldError? in
            do throws(HeraldError) {
                for try await _ in events { first.send(()) }
                return nil
            } catch {
                return error
            }
        }
        try await first.value()
        consumer.cancel()
        #expect(await consumer.value?.code == .cancelled)
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.server.waitForOpenConnections(0)
        try await fixture.tearDown()
    }
}

@Suite("HTTPSessionManager's streamed forms")
struct HTTPSessionManagerStreamingTests {
    @Test("bytes and events resolve their path against the base URL and send the serializer's query")
    func relativeStreams() async throws {
        let fixture = try await SessionFixture.make()
        let manager = HTTPSessionManager(baseURL: fixture.server.url("/"), session: fixture.session)
        let (response, body) = try await manager.bytes("bytes/1000", parameters: ["chunkSize": 100])
        #expect(response.statusCode == 200)
        #expect(try await readAll(body).get().count == 1000)
        #expect(fixture.server.requests.first?.uri == "/bytes/1000?chunkSize=100")
        let events = try manager.events("events/2", parameters: ["retry": 1])
        let (received, error) = try await readAll(events)
        #expect(error == nil)
        #expect(received.map(\.id) == ["1", "2"])
        try await fixture.tearDown()
    }
}
