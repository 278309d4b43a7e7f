import Foundation
import Herald
import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("A request on a kept-alive connection the server reset is sent once more on a fresh one")
struct FreshConnectionRetryTests {
    /// The loopback server resets a kept-alive connection when a second request arrives on it.
    private static let path = "/fault/reset-when-reused"

    @Test("a GET on a reused connection that is reset is sent again once: one task, one resume, one complete")
    func reusedConnectionReset() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        _ = try await fixture.session.data(for: Request(url: fixture.server.url(Self.path)))
        let (data, response) = try await fixture.session.data(for: Request(url: fixture.server.url(Self.path)))
        try await fixture.recorder.waitForCompletions(2)
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        let task = try #require(fixture.recorder.completions.last?.taskIdentifier)
        #expect(fixture.recorder.timeline(ofTask: task) == [.resume, .complete])
        // The first request and the second on one connection (reset), the second again on a new one.
        #expect(fixture.server.requests(forPath: Self.path).count == 3)
        #expect(fixture.server.statistics.acceptedConnections == 2)
        try await fixture.tearDown()
    }

    @Test("a same-origin redirect whose hop meets a reset connection completes as one task")
    func redirectHopRetried() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let url = fixture.server.url("/redirect-to?url=\(Self.path)")
        let (data, response) = try await fixture.session.data(for: Request(url: url))
        try await fixture.recorder.waitForCompletions(1)
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        let task = try #require(fixture.recorder.completions.first?.taskIdentifier)
        #expect(
            fixture.recorder.timeline(ofTask: task).filter { $0 == .resume || $0 == .complete } == [.resume, .complete])
        #expect(fixture.server.requests(forPath: Self.path).count == 2)
        try await fixture.tearDown()
    }

    @Test("an idempotent request with a body that can be read again is sent again whole, as one task")
    func bodySentAgain() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let url = fixture.server.url(Self.path)
        _ = try await fixture.session.data(for: Request(url: url))
        let body = Data(repeating: UInt8(ascii: "x"), count: 4096)
        let (data, response) = try await fixture.session.data(for: Request(url: url, method: "PUT", body: body))
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        let puts = fixture.server.requests(forPath: Self.path).filter { $0.method == "PUT" }
        // The PUT that met the reset, then the whole PUT again on a fresh connection.
        #expect(puts.count == 2)
        #expect(puts.last?.bodyByteCount == body.count)
        try await fixture.recorder.waitForCompletions(2)
        let task = try #require(fixture.recorder.completions.last?.taskIdentifier)
        #expect(fixture.recorder.timeline(ofTask: task) == [.resume, .complete])
        try await fixture.tearDown()
    }
}

extension FreshConnectionRetryTests {
    @Test(
        "a POST whose kept-alive connection ends before any answer is not sent again: the server may have it",
        .enabled(if: CurlFeatures.reportsConnectionBeforeRequest, "the pre-request callback is libcurl 7.80's"))
    func postNotSentAgain() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // A later request on the connection: read whole, then the connection closed (FIN) without a word.
        let url = fixture.server.url(Self.path + "?close=1")
        _ = try await fixture.session.data(for: Request(url: url))
        // libcurl would send it again on a fresh connection by itself, and the order would be placed twice.
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: url, method: "POST", body: Data("order=1".utf8)), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(2)
        let error = try #require(log.all.first?.error)
        #expect(error.code == .networkConnectionLost)
        #expect(error.message.contains("not sent again"))
        #expect(fixture.server.requests(forPath: Self.path).filter { $0.method == "POST" }.count == 1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        // An idempotent request the same thing happens to is sent again, by libcurl, and answered.
        _ = try await fixture.session.data(for: Request(url: url))
        let (data, _) = try await fixture.session.data(for: Request(url: url, method: "PUT", body: Data("a".utf8)))
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(fixture.server.requests(forPath: Self.path).filter { $0.method == "PUT" }.count == 2)
        try await fixture.tearDown()
    }

    @Test("the metrics of a request sent again on a fresh connection count from its start, the first attempt's too")
    func metricsCountBothAttempts() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // The reused connection is reset 1.5 s after the second request arrives on it; the fresh one answers at once.
        let url = fixture.server.url(Self.path + "?resetAfterMs=1500")
        _ = try await fixture.session.data(for: Request(url: url))
        let clock = ContinuousClock()
        let start = clock.now
        let task = try fixture.session.dataTask(with: Request(url: url))
        task.resume()
        try await fixture.recorder.waitForCompletions(2)
        let elapsed = clock.now - start
        #expect(task.error == nil)
        let metrics = try #require(fixture.recorder.completions.last?.metrics)
        // Before, total counted from the second attempt alone: a few milliseconds.
        #expect(metrics.total >= 1.4, "total \(metrics.total) s of \(elapsed)")
        #expect(Duration.seconds(metrics.total) <= elapsed)
        #expect(metrics.timeToFirstByte >= 1.4 && metrics.timeToFirstByte <= metrics.total)
        try await fixture.tearDown()
    }

    @Test("the request sent again on a fresh connection has only what is left of the resource timeout")
    func retryKeepsResourceTimeout() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 10
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        // A fresh connection's request is answered after 5 s (well within 10 s, however busy the machine); a
        // reused one's is reset after 5.5 s. So the second request meets the reset at 5.5 s, and its new attempt
        // would be answered at 10.5 s: past its 10 s.
        let url = fixture.server.url(Self.path + "?firstDelayMs=5000&resetAfterMs=5500")
        _ = try await fixture.session.data(for: Request(url: url))
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.data(for: Request(url: url))
        }
        let elapsed = clock.now - start
        // It completed with a 200 at 10.5 s before: curl counted the timeout afresh from the new attempt.
        #expect(error?.code == .timedOut, "\(String(describing: error)) after \(elapsed)")
        #expect(fixture.server.requests(forPath: Self.path).count == 3)
        try await fixture.tearDown()
    }
}
