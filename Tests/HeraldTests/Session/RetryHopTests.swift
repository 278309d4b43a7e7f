import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Retries combined with the task's other hops and kinds: redirects, downloads.
@Suite("Retries with redirects and downloads")
struct RetryHopTests {
    @Test("a retry starts again from the original request: the redirect is followed again, then succeeds")
    func retryAfterRedirect() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let target = "/flaky?key=redirected&fail=1".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (task, log) = try await fixture.run(Request(url: fixture.server.url("/redirect-to?url=\(target)")))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/redirect-to").count == 2)
        #expect(fixture.server.requests(forPath: "/flaky").count == 2)
        // Two attempts of two hops each.
        #expect(task.hopMetrics.count == 4)
        try await fixture.tearDown()
    }

    @Test("a retried download keeps only the successful attempt's body in its file")
    func downloadRetried() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let outcome = Locked<(HTTPResponse?, URL?, HeraldError?)?>(nil)
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/flaky?key=download&fail=1")),
            completionHandler: { response, file, error in outcome.withLock { $0 = (response, file, error) } })
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        let (response, file, error) = try #require(outcome.withLock { $0 })
        #expect(error == nil)
        #expect(response?.statusCode == 200)
        let url = try #require(file)
        #expect(try String(contentsOf: url, encoding: .utf8) == #"{"attempt":2,"key":"download"}"#)
        try? FileManager.default.removeItem(at: url)
        try await fixture.tearDown()
    }
}

/// Cancellation while the adapter runs.
@Suite("Adapter and cancellation")
struct AdapterCancellationTests {
    @Test("cancel while the adapter runs: the task completes at once, cancelled, and the adapted request is not sent")
    func cancelDuringAdaptation() async throws {
        let fixture = try await SessionFixture.make()
        let entered = OneShot<Void>()
        let release = OneShot<Void>()
        let returned = OneShot<Void>()
        // The adapter returns when the test releases it, never on a clock: a timeout here would let a
        // test held back on a busy machine (its cancel not yet made) see the adapted request sent.
        fixture.session.interceptor = Interceptor(adapt: { request, _ in
            // The later request that shows nothing more was sent goes straight through.
            if request.url.query == "after=1" { return request }
            entered.send(())
            try? await release.value(timeout: .seconds(600))
            returned.send(())
            return request
        })
        defer { release.send(()) }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/json")), completionHandler: log.handler)
        task.resume()
        try await entered.value()
        task.cancel()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        release.send(())
        try await returned.value()
        // A request made after the adapter returned goes through the same engine; then a second of quiet: the
        // cancelled task's request, had it been sent, would have arrived by the end of either.
        _ = try await fixture.run(Request(url: fixture.server.url("/json?after=1")), completions: 2)
        await #expect(throws: TestServerError.self) {
            try await fixture.server.waitUntil(timeout: .seconds(1)) { $0.requestCount >= 2 }
        }
        #expect(fixture.server.requests(forPath: "/json").map(\.uri) == ["/json?after=1"])
        try await fixture.tearDown()
    }
}
