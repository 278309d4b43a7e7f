import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("Failures complete exactly once with a typed error")
struct FailureTimelineTests {
    @Test("connection refused completes once with cannotConnect")
    func connectionRefused() async throws {
        let fixture = try await SessionFixture.make()
        // A port bound by no listener: nothing accepts there.
        let closed = try RefusingPort()
        defer { closed.close() }
        let url = closed.url("/json")
        let log = CompletionLog()
        let task = try fixture.session.dataTask(with: Request(url: url), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let error = try #require(log.all.first?.error)
        #expect(error.code == .cannotConnect)
        #expect(error.curlCode == 7)
        #expect(log.all.count == 1)
        try await fixture.tearDown()
    }

    /// Runs one task to `path` with an idle timeout of `timeout` seconds on a fresh fixture (torn down after)
    /// and returns its timeline, its completion's error and how long it took from `resume()`.
    private static func runIdle(path: String, timeout: TimeInterval) async throws -> (
        timeline: [RecordingObserver.Kind], error: HeraldError?, elapsed: Duration
    ) {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let started = ContinuousClock.now
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url(path), timeoutInterval: timeout), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let elapsed = ContinuousClock.now - started
        let timeline = fixture.recorder.timeline(ofTask: task.taskIdentifier)
        #expect(log.all.count == 1)
        try await fixture.tearDown()
        return (timeline, log.all.first?.error, elapsed)
    }

    @Test("a server that never answers times out with timedOut after the request timeout")
    func stallTimesOut() async throws {
        let run = try await Self.runIdle(path: "/fault/stall", timeout: 0.5)
        #expect(run.timeline == [.resume, .complete])
        #expect(run.error?.code == .timedOut)
        #expect(run.elapsed >= .milliseconds(500))
        #expect(run.elapsed < .seconds(30))  // generous: a loaded or sanitized run is slow
    }

    @Test("an idle timeout after part of the body fails the transfer when it is due, with timedOut")
    func idleTimeoutMidBody() async throws {
        // The first 1,000 bytes at once, then a minute of silence.
        let run = try await Self.runIdle(path: "/bytes/2000?chunkSize=1000&delayMs=60000", timeout: 0.3)
        #expect(run.timeline == [.resume, .complete])
        #expect(run.error?.code == .timedOut)
        // The multi handle's idle timer failed it (the message is Herald's, not curl's).
        #expect(run.error?.message == "No data moved for 0.3 seconds.")
        #expect(run.elapsed >= .milliseconds(300))
        #expect(run.elapsed < .seconds(30))  // generous: a loaded or sanitized run is slow
    }

    @Test("a reset in the middle of the body completes once with networkConnectionLost")
    func resetMidBody() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/reset-mid-body?bytes=4096")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .networkConnectionLost)
        // A reset discards what the client had not read yet, so the head may or may not have arrived;
        // when it did, it is the server's 200.
        if let response = log.all.first?.response { #expect(response.statusCode == 200) }
        try await fixture.tearDown()
    }

    @Test("a body shorter than its Content-Length is an error, not a short success")
    func truncatedBody() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/truncated?declared=1000&sent=10")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error?.code == .networkConnectionLost)
        #expect(log.all.first?.object == nil)
        try await fixture.tearDown()
    }

    @Test("a garbage status line completes with badServerResponse")
    func garbageStatusLine() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/garbage-status")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error?.code == .badServerResponse)
        try await fixture.tearDown()
    }

    @Test("other tasks on the same session are unaffected by one task's failure")
    func failureIsolated() async throws {
        let fixture = try await SessionFixture.make()
        let failing = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/reset-before-headers")))
        let healthy = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        failing.resume()
        healthy.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(failing.error != nil)
        #expect(healthy.error == nil)
        #expect(healthy.response?.statusCode == 200)
        try await fixture.tearDown()
    }
}
