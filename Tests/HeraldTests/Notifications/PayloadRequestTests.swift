import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Payloads carry the request")
struct PayloadRequestTests {
    @Test("taskDidComplete's date is when the task completed, before its completion handler ran, not after")
    func completionDateBeforeHandler() async throws {
        let fixture = try await SessionFixture.make()
        let handlerStarted = Locked<Date?>(nil)
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json"))) { _, _, _ in
            handlerStarted.withLock { $0 = Date() }
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let completion = try #require(fixture.recorder.completions.first)
        let started = try #require(handlerStarted.withLock { $0 })
        #expect(completion.date <= started)
        try await fixture.tearDown()
    }

    @Test("resume, suspend and complete carry the method, the credential-redacted URL and the caller's headers")
    func lifecyclePayloads() async throws {
        let fixture = try await SessionFixture.make()
        let requests = Locked<[String: RequestSummary]>([:])
        let tokens = [
            fixture.center.addObserver(for: .taskDidResume) { note in
                requests.withLock { $0["resume"] = note.userInfo.request }
            },
            fixture.center.addObserver(for: .taskDidComplete) { note in
                requests.withLock { $0["complete"] = note.userInfo.request }
            },
        ]
        var url = URLComponents(url: fixture.server.url("/redirect/1"), resolvingAgainstBaseURL: false)!
        url.user = "ada"
        url.password = "s3cret"
        let original = try #require(url.url)
        let task = try fixture.session.dataTask(
            with: Request(url: original, method: "DELETE", headers: ["X-Trace-Me": "yes"]))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // sessionDidInvalidate comes after every observer has had the completion.
        fixture.session.invalidate(cancelingTasks: false)
        try await fixture.recorder.waitForInvalidation()

        let port = fixture.server.port
        for kind in ["resume", "complete"] {
            let request = try #require(requests.withLock { $0[kind] }, "no \(kind)")
            #expect(request.method == "DELETE", "\(kind)")
            #expect(request.url.absoluteString == "http://***:***@127.0.0.1:\(port)/redirect/1", "\(kind)")
            #expect(request.headers["X-Trace-Me"] == "yes", "\(kind)")
            #expect(request.serviceContext == nil, "\(kind): made outside any trace")
        }
        #expect(task.serviceContext == nil)
        #expect(fixture.recorder.completions.first?.finalURL?.path == "/redirect/0")
        tokens.forEach { $0.cancel() }
        try await fixture.server.shutdown()
    }

    @Test("taskDidComplete's response and finalURL, and taskWillRetry's response, carry no password from the URL")
    func responsesRedactCredentials() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy(retryLimit: 1, backoffScale: 0.01, maximumBackoff: 0.05)
        let retried = Locked<[TaskRetry]>([])
        let token = fixture.center.addObserver(for: .taskWillRetry) { note in
            retried.withLock { $0.append(note.userInfo) }
        }
        var url = URLComponents(url: fixture.server.url("/flaky?key=redacted"), resolvingAgainstBaseURL: false)!
        url.user = "ada"
        url.password = "s3cret"
        let task = try fixture.session.dataTask(with: Request(url: try #require(url.url)))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let completion = try #require(fixture.recorder.completions.first)
        let port = fixture.server.port
        #expect(completion.response?.statusCode == 200)
        #expect(completion.finalURL?.absoluteString == "http://***:***@127.0.0.1:\(port)/flaky?key=redacted")
        #expect(completion.response?.url == completion.finalURL)
        let retry = try #require(retried.withLock { $0.first })
        #expect(retry.response?.statusCode == 503)
        #expect(retry.response?.url.absoluteString.contains("s3cret") == false)
        #expect(retry.error.response?.url.absoluteString.contains("s3cret") == false)
        // The task's own response, the caller's, keeps the URL as the caller wrote it.
        #expect(task.response?.url.password == "s3cret")
        token.cancel()
        try await fixture.tearDown()
    }
}
