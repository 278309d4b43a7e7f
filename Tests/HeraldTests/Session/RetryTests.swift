import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Interceptors on the wire: a retried task stays one task, each retry is announced between its resume and
/// its completion, and the adapter runs before every attempt.
@Suite("Retries and interceptors")
struct RetryTests {
    @Test("a server failing twice then answering: the third attempt succeeds, timeline resume, retry, retry, complete")
    func failsTwiceThenSucceeds() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let (task, log) = try await fixture.run(
            Request(url: fixture.server.url("/flaky?key=twice&fail=2")))

        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .retry, .complete])
        #expect(fixture.recorder.timeline.count == 4)
        let retries = fixture.recorder.events.compactMap(\.retry)
        #expect(retries.map(\.attempt) == [2, 3])
        #expect(retries.map(\.error.code) == [.unacceptableStatusCode, .unacceptableStatusCode])
        #expect(retries.map(\.error.statusCode) == [503, 503])
        #expect(retries.map { $0.response?.statusCode } == [503, 503])
        #expect(retries.allSatisfy { $0.delay >= 0 && $0.delay <= 0.05 * 1.25 })

        let call = try #require(log.all.first)
        #expect(log.all.count == 1)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        let body = try #require(call.object as? JSONValue)
        #expect(body["attempt"] == 3)
        #expect(fixture.server.requests(forPath: "/flaky").count == 3)
        // Every attempt's metrics are kept, in order.
        #expect(task.hopMetrics.count == 3)
        try await fixture.tearDown()
    }

    @Test("a POST is not retried by default: one attempt, its 503 delivered")
    func postIsNotRetried() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let (task, log) = try await fixture.run(
            Request(url: fixture.server.url("/flaky?key=post&fail=2"), method: "POST", body: Data("x".utf8)))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.first?.response?.statusCode == 503)
        #expect(log.all.first?.error?.code == .unacceptableStatusCode)
        #expect(fixture.server.requests(forPath: "/flaky").count == 1)

        // Added to the retryable methods, the same POST is retried.
        var policy = RetryPolicy.fast
        policy.retryableHTTPMethods.insert("POST")
        fixture.session.interceptor = policy
        let (retried, retriedLog) = try await fixture.run(
            Request(url: fixture.server.url("/flaky?key=post2&fail=1"), method: "POST", body: Data("x".utf8)),
            completions: 2)
        #expect(fixture.recorder.timeline(ofTask: retried.taskIdentifier) == [.resume, .retry, .complete])
        #expect(retriedLog.all.first?.response?.statusCode == 200)
        // The body was sent again with the retry.
        #expect(fixture.server.requests(forPath: "/flaky").suffix(2).map(\.bodyByteCount) == [1, 1])
        try await fixture.tearDown()
    }

    @Test("a 429 with Retry-After: 1 waits one second before the next attempt")
    func retryAfterIsHonoured() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let (task, log) = try await fixture.run(
            Request(url: fixture.server.url("/flaky?key=busy&fail=1&status=429&retry-after=1")))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        let retry = try #require(fixture.recorder.events.compactMap(\.retry).first)
        #expect(retry.delay == 1)
        #expect(retry.response?.statusCode == 429)
        #expect(log.all.first?.response?.statusCode == 200)
        let arrivals = fixture.server.requests(forPath: "/flaky").map(\.receivedAt)
        #expect(arrivals.count == 2)
        if arrivals.count == 2 { #expect(arrivals[0].duration(to: arrivals[1]) >= .milliseconds(990)) }
        try await fixture.tearDown()
    }

    @Test("cancel during the backoff delay: one complete, cancelled, and no further attempt")
    func cancelDuringBackoff() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=long&fail=1&retry-after=6")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .retry } }
        task.cancel()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(5))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        #expect(task.state == .completed)
        // Had the cancel left the retry's timer running, its attempt would arrive six seconds after the retry. The
        // delay leaves a slow (sanitized, loaded) run seconds to cancel before the timer could fire by itself.
        await #expect(throws: TestServerError.self) {
            try await fixture.server.waitUntil(timeout: .seconds(7)) { $0.requestCount >= 2 }
        }
        #expect(fixture.server.requests(forPath: "/flaky").count == 1)
        try await fixture.tearDown()
    }

    @Test("a cancel while the retrier decides: the task reports the failed attempt's metrics, its one transfer")
    func cancelWhileRetrierDecides() async throws {
        let fixture = try await SessionFixture.make()
        let asked = OneShot<Void>()
        let decide = OneShot<Void>()
        fixture.session.interceptor = Interceptor(retry: { _ in
            asked.send(())
            // Decides only once the task has completed.
            try? await decide.value(timeout: .seconds(30))
            return .retry
        })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=cancel-deciding&fail=1")), completionHandler: log.handler)
        task.resume()
        try await asked.value()
        task.cancel()
        try await fixture.recorder.waitForCompletions(1)
        decide.send(())
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error?.code == .cancelled)
        #expect(completion.response?.statusCode == 503)
        // Before, the transfer that ran was in neither: no metrics, and no transfer for a metrics observer to count.
        #expect(completion.metrics?.httpVersion != nil)
        #expect(task.hopMetrics.count == 1)
        #expect(fixture.server.requests(forPath: "/flaky").count == 1)
        try await fixture.tearDown()
    }

    @Test("suspend before the next attempt holds it until resume; the task resumes and completes once")
    func suspendDuringBackoff() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = Interceptor(retry: { context in
            // Suspended while the retrier decides: the attempt that follows must wait for resume().
            context.task.suspend()
            return .retry
        })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=held&fail=1")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .retry } }
        #expect(task.state == .suspended)
        #expect(fixture.server.requests(forPath: "/flaky").count == 1)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(
            fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .retry, .resume, .complete])
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/flaky").count == 2)
        try await fixture.tearDown()
    }

    @Test("the adapter runs before every attempt, off the caller's thread, and its header reaches the server")
    func adapterRunsPerAttempt() async throws {
        let fixture = try await SessionFixture.make()
        let adaptations = Locked(0)
        let adapter = Interceptor(adapt: { request, _ in
            let count = adaptations.withLock { count -> Int in
                count += 1
                return count
            }
            var request = request
            request.headers.replaceOrAdd(name: "Authorization", value: "Bearer token-\(count)")
            return request
        })
        fixture.session.interceptor = Interceptor(adapters: [adapter], retriers: [RetryPolicy.fast])
        let (task, log) = try await fixture.run(Request(url: fixture.server.url("/flaky?key=auth&fail=1")))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(log.all.first?.error == nil)
        #expect(adaptations.withLock { $0 } == 2)
        let sent = fixture.server.requests(forPath: "/flaky").map { $0.headerValue("Authorization") }
        #expect(sent == ["Bearer token-1", "Bearer token-2"])
        try await fixture.tearDown()
    }

    @Test("a task's own interceptor runs before the session's; a throwing adapter fails the task before any byte")
    func taskInterceptorAndAdapterFailure() async throws {
        let fixture = try await SessionFixture.make()
        let order = Locked<[String]>([])
        fixture.session.interceptor = Interceptor(adapt: { request, _ in
            order.withLock { $0.append("session") }
            return request
        })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/json")), completionHandler: log.handler)
        task.interceptor = Interceptor(adapt: { request, _ in
            order.withLock { $0.append("task") }
            return request
        })
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(order.withLock { $0 } == ["task", "session"])
        #expect(log.all.first?.error == nil)

        struct TokenUnavailable: Error {}
        fixture.session.interceptor = Interceptor(adapt: { _, _ in throw TokenUnavailable() })
        let (refused, failing) = try await fixture.run(Request(url: fixture.server.url("/echo")), completions: 2)
        #expect(fixture.recorder.timeline(ofTask: refused.taskIdentifier) == [.resume, .complete])
        let error = try #require(failing.all.first?.error)
        #expect(error.code == .invalidRequest)
        #expect(error.underlying is TokenUnavailable)
        #expect(fixture.server.requests(forPath: "/echo").isEmpty)
        try await fixture.tearDown()
    }

    @Test("a streamed upload is retried with a new stream from taskNeedNewBodyStream")
    func streamedUploadRetried() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let renewals = Locked(0)
        fixture.session.taskNeedNewBodyStream = { _ in
            renewals.withLock { $0 += 1 }
            return BodyStream(data: Data("again".utf8))
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/flaky?key=stream&fail=1"), method: "PUT"),
            bodyProvider: BodyStream(data: Data("first".utf8)), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(renewals.withLock { $0 } == 1)
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/flaky").map(\.bodyByteCount) == [5, 5])
        try await fixture.tearDown()
    }

    @Test(
        "a streamed upload whose stream can't be given again is not offered to the retrier: its 503 stands",
        arguments: ["/flaky?key=once&fail=1", "/status/303?location=%2Fflaky%3Fkey%3Dafter303%26fail%3D1"])
    func streamedUploadWithoutRenewal(path: String) async throws {
        let fixture = try await SessionFixture.make()
        let asked = Locked(0)
        fixture.session.interceptor = CountingRetrier(asked: asked)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url(path), method: "PUT"),
            bodyProvider: BodyStream(data: Data("first".utf8)), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // Before, the retry was announced and waited for, then the task failed with bodyStream, its 503 lost; after
        // a 303 too, whose GET has no body of its own: a retry sends the PUT again.
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(asked.withLock { $0 } == 0)
        #expect(log.all.first?.error?.code == .unacceptableStatusCode)
        #expect(log.all.first?.response?.statusCode == 503)
        let redirected = path.hasPrefix("/status/303")
        #expect(fixture.server.requests(forPath: "/flaky").map(\.method) == [redirected ? "GET" : "PUT"])
        try await fixture.tearDown()
    }

    /// Retries everything, counting the questions.
    private struct CountingRetrier: RequestInterceptor {
        let asked: Locked<Int>

        func retry(_ context: RetryContext) async -> RetryDecision {
            asked.withLock { $0 += 1 }
            return .retry
        }
    }

    /// Retries with ``RetryPolicy/fast``, sending every attempt after the first to `url`: the adapter picks the
    /// URL per attempt.
    private static func retrying(to url: URL) -> Interceptor {
        let attempts = Locked(0)
        return Interceptor(
            adapters: [
                Interceptor(adapt: { request, _ in
                    let attempt = attempts.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    var request = request
                    if attempt > 1 { request.url = url }
                    return request
                })
            ], retriers: [RetryPolicy.fast])
    }

    /// Runs a download to `destination` whose first attempt breaks after 500 bytes (no validator: a retry starts
    /// the file over), until it completes; the fixture's interceptor says where the retry goes.
    private static func downloadBrokenOnce(
        _ fixture: SessionFixture, to destination: URL
    ) async throws -> (DownloadTask, DownloadLog) {
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/fault/truncated?declared=1000&sent=500")),
            destination: { _, _ in destination }, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        return (task, log)
    }

    @Test("a retried download whose last attempt meets a challenge no one answers fails, and moves nothing")
    func retriedDownloadEndingOnAChallenge() async throws {
        let fixture = try await SessionFixture.make()
        // The first attempt breaks after 500 bytes (no validator: the retry starts the file over), the second is
        // answered 401, and the challenge hook turns it down.
        fixture.session.interceptor = Self.retrying(to: fixture.server.url("/auth/basic?user=u&password=p"))
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .rejectProtectionSpace }
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("out.bin")
        let (task, log) = try await Self.downloadBrokenOnce(fixture, to: destination)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        // Before, the task succeeded and moved the first attempt's 500 bytes as the file.
        let call = try #require(log.all.first)
        #expect(call.error?.code == .unacceptableStatusCode)
        #expect(call.response?.statusCode == 401)
        #expect(call.fileURL == nil)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(!FileManager.default.fileExists(atPath: task.temporaryURL.path))
        try await fixture.tearDown()
    }

    @Test("a retried download whose last attempt ends on a refused redirect moves an empty file, not the first's bytes")
    func retriedDownloadEndingOnARefusedRedirect() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = Self.retrying(to: fixture.server.url("/redirect-to?url=%2Fbytes%2F10"))
        fixture.session.taskWillPerformHTTPRedirection = { _, _, _ in nil }
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("out.bin")
        let (_, log) = try await Self.downloadBrokenOnce(fixture, to: destination)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 302)
        #expect(call.fileURL == destination)
        // The redirect's answer has no body the file could hold. Before, it held the first attempt's 500 bytes.
        let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
        #expect((attributes[.size] as? Int) == 0)
        #expect(fixture.server.requests(forPath: "/bytes/10").isEmpty)
        try await fixture.tearDown()
    }

    @Test("a transport error is retried: a connection reset before the head, then an answer")
    func transportErrorRetried() async throws {
        let fixture = try await SessionFixture.make()
        // The first attempt goes to a reset, the second to /json.
        fixture.session.interceptor = Self.retrying(to: fixture.server.url("/json"))
        let (task, log) = try await fixture.run(
            Request(url: fixture.server.url("/fault/reset-before-headers")))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        let retry = try #require(fixture.recorder.events.compactMap(\.retry).first)
        #expect(retry.response == nil)
        #expect(RetryPolicy.defaultRetryableErrorCodes.contains(retry.error.code))
        #expect(log.all.first?.error == nil)
        try await fixture.tearDown()
    }

    @Test("a retry answered in chunks has no total: the failed attempt's declared length is not kept")
    func retryProgressTotal() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // The first attempt declares 1,000 bytes and stops at 500; the second sends 50,000 in chunks.
        fixture.session.interceptor = Self.retrying(to: fixture.server.url("/bytes/50000?chunked=1"))
        let (task, log) = try await fixture.run(
            Request(url: fixture.server.url("/fault/truncated?declared=1000&sent=500")))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(log.all.first?.error == nil)
        // Before, the total stayed 1,000 under 50,000 bytes received: complete at once, and never indeterminate.
        #expect(task.downloadProgress.completedUnitCount == 50_000)
        #expect(task.downloadProgress.totalUnitCount == -1)
        try await fixture.tearDown()
    }

    @Test("each hop gets what is left of the resource timeout since the first transfer, counted once")
    func resourceTimeoutAcrossThreeHops() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 12
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let hops = Locked(0)
        // On each of the first two redirects the hook asks a slow service first, as a hook refreshing a token would:
        // the test server answers it 4 s late. 8 s of the 12 are spent when the third transfer starts, and it
        // answers at once (4 s of room on a loaded machine; the Makefile runs it alone).
        let service = SessionManager(notificationCenter: NotificationHub())
        defer { service.invalidate(cancelingTasks: true) }
        let slow = Request(url: fixture.server.url("/delay/4000"))
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            let hop = hops.withLock { count -> Int in
                count += 1
                return count
            }
            guard hop <= 2 else { return proposed }
            let answered = DispatchSemaphore(value: 0)
            let asked = try? service.dataTask(with: slow) { _, _, _ in answered.signal() }
            asked?.resume()
            #expect(answered.wait(timeout: .now() + 30) == .success)
            return proposed
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/redirect/3")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        // Before, the third transfer was given 12 − 4 − 8 s: none, and the task failed with timedOut.
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(hops.withLock { $0 } == 3)
        #expect(fixture.server.requests(forPath: "/delay/4000").count == 2)
        try await fixture.tearDown()
    }

    @Test("a task suspended while its redirection hook ran keeps its resource timeout: it times out suspended")
    func resourceTimeoutRunsWhileSuspendedBetweenHops() async throws {
        var configuration = SessionConfiguration()
        // Room for the first hop on a loaded machine (the broad run's 180 suites on two cores): it must answer
        // before the deadline for the hook to run at all.
        configuration.timeoutIntervalForResource = 8
        let fixture = try await SessionFixture.make(configuration: configuration)
        fixture.session.taskWillPerformHTTPRedirection = { task, _, proposed in
            task.suspend()
            return proposed
        }
        let log = CompletionLog()
        let url = fixture.server.url("/redirect-to?url=%2Ffault%2Fstall")
        let task = try fixture.session.dataTask(with: Request(url: url), completionHandler: log.handler)
        task.resume()
        // Never resumed. Before, the next transfer waited for resume() with no timeout at all.
        try await Self.expectTimedOutSuspended(task, fixture, log, neverAsked: "/fault/stall", within: .seconds(40))
    }

    /// Waits for `task`, suspended and never resumed, to complete with its resource timeout, `path` never asked.
    private static func expectTimedOutSuspended(
        _ task: SessionTask, _ fixture: SessionFixture, _ log: CompletionLog, neverAsked path: String,
        within timeout: Duration
    ) async throws {
        try await fixture.recorder.waitForCompletions(1, timeout: timeout)
        let error = try #require(log.all.first?.error)
        #expect(error.code == .timedOut)
        #expect(error.message.contains("resource timeout"))
        #expect(fixture.server.requests(forPath: path).isEmpty)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .complete])
        try await fixture.tearDown()
    }

    @Test("a task suspended while its adapter ran keeps its resource timeout: it times out before its first transfer")
    func resourceTimeoutRunsWhileSuspendedBeforeTheFirstTransfer() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 1
        let fixture = try await SessionFixture.make(configuration: configuration)
        fixture.session.interceptor = Interceptor(adapt: { request, task in
            task.suspend()
            return request
        })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/10")), completionHandler: log.handler)
        task.resume()
        // Never resumed. Before, the first transfer waited for resume() with no timeout at all: the resource
        // timeout counted from a transfer's start only once a transfer had ended.
        try await Self.expectTimedOutSuspended(task, fixture, log, neverAsked: "/bytes/10", within: .seconds(20))
    }

    @Test("a Retry-After longer than the resource timeout leaves is not waited for: the 503 is the task's, at once")
    func retryAfterPastTheResourceTimeout() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 20
        let fixture = try await SessionFixture.make(configuration: configuration)
        fixture.session.interceptor = RetryPolicy()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/flaky?key=past-deadline&fail=5&status=503&retry-after=100")),
            completionHandler: log.handler)
        let started = ContinuousClock.now
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        // Before, the retry was announced and the task ended 20 s later with timedOut, its 503 lost.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(log.all.first?.response?.statusCode == 503)
        #expect(log.all.first?.error?.code == .unacceptableStatusCode)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a transfer the resource timeout ended is not offered to the retrier: one resume, one complete")
    func resourceTimeoutIsNotRetried() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 1
        let fixture = try await SessionFixture.make(configuration: configuration)
        let asked = Locked(0)
        fixture.session.interceptor = Interceptor(retry: { _ in
            asked.withLock { $0 += 1 }
            return .retry
        })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/stall")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error?.code == .timedOut)
        #expect(asked.withLock { $0 } == 0)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }
}
