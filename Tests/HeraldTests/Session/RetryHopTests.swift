import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Retries combined with the task's other hops and kinds: redirects, downloads.
@Suite("Retries with redirects and downloads")
struct RetryHopTests {
    private static let fastPolicy = RetryPolicy(backoffScale: 0.01, maximumBackoff: 0.05)

    @Test("a retry starts again from the original request: the redirect is followed again, then succeeds")
    func retryAfterRedirect() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = Self.fastPolicy
        let target = "/flaky?key=redirected&fail=1".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/redirect-to?url=\(target)")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
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
        fixture.session.interceptor = Self.fastPolicy
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
