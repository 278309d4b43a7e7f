import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing

@testable import HeraldObservers

extension Payloads {
    static func retry(
        task: Int, session: Int = 1, request: RequestSummary = anyRequest, attempt: Int = 2, status: Int? = 503,
        delay: TimeInterval = 1.5, date: Date = Date()
    ) -> TypedNotification<TaskRetry> {
        let url = request.url
        return TypedNotification(
            name: .taskWillRetry, object: nil,
            userInfo: TaskRetry(
                taskIdentifier: task, sessionIdentifier: session, request: request, date: date, attempt: attempt,
                error: HeraldError(.unacceptableStatusCode, "The server answered 503.", url: url, statusCode: status),
                response: status.map { response($0, url: url) }, delay: delay))
    }
}

/// Each ready observer reports `taskWillRetry`: a log line, a counter, a span event, a JSON line.
@Suite("Observers of taskWillRetry")
struct RetryObserverTests {
    @Test("a retry's delay is waited for up to a year, as the session waits: two days are two days, not one")
    func longRetryDelays() {
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: 2 * 86_400) == 2 * 86_400 * 1_000_000_000)
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: 1.5) == 1_500_000_000)
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: 10 * 365 * 86_400) == 365 * 86_400 * 1_000_000_000)
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: .infinity) == 365 * 86_400 * 1_000_000_000)
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: -1) == 0)
        #expect(DispatchObserverScheduler.nanoseconds(forDelay: .nan) == 0)
    }

    let tasks = OfflineTasks()

    @Test("the logging observer writes 'task will retry' at debug with attempt, delay, status and error type")
    func logLine() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "herald.test") { _ in handler }
        logger.logLevel = .debug
        let task = try tasks.task("http://user:s3cret@example.com/items")
        let observer = LoggingObserver(logger: logger)
        observer.taskWillRetry(Payloads.retry(task: 4, session: 2, request: task.summary))
        await observer.flush()
        let entry = try #require(handler.entries.first)
        #expect(handler.entries.count == 1)
        #expect(entry.level == .debug)
        #expect(entry.message.description == "task will retry")
        #expect(entry.metadata["herald.retry.attempt"]?.description == "2")
        #expect(entry.metadata["herald.retry.delay"] == "1.500")
        #expect(entry.metadata["http.response.status_code"]?.description == "503")
        #expect(entry.metadata["error.type"] == "503")
        #expect(entry.metadata["herald.task.id"]?.description == "4")
        #expect(entry.metadata["http.request.method"] == "GET")
        #expect(!handler.entries.description.contains("s3cret"))
    }

    @Test("the metrics observer counts retries by method, status code and error type, making each counter once")
    func counter() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        let task = try tasks.task("http://example.com/a")
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary))
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary, attempt: 3))
        observer.taskWillRetry(Payloads.retry(task: 2, request: task.summary, status: 429))
        let fiveHundreds = try metrics.test.expectCounter(
            MetricsObserver.Name.retries,
            [("http.request.method", "GET"), ("http.response.status_code", "503"), ("error.type", "503")])
        #expect(fiveHundreds.totalValue == 2)
        let fourHundreds = try metrics.test.expectCounter(
            MetricsObserver.Name.retries,
            [("http.request.method", "GET"), ("http.response.status_code", "429"), ("error.type", "429")])
        #expect(fourHundreds.totalValue == 1)
        #expect(metrics.count(MetricsObserver.Name.retries) == 2)
        // A response below 400 the task refused has no error type: the counter has no such label, not an empty one.
        let refused = TypedNotification(
            name: .taskWillRetry, object: nil,
            userInfo: TaskRetry(
                taskIdentifier: 3, sessionIdentifier: 1, request: task.summary, date: Date(), attempt: 2,
                error: HeraldError(.unacceptableContentType, "Not JSON.", url: task.summary.url, statusCode: 200),
                response: Payloads.response(200, url: task.summary.url), delay: 0))
        observer.taskWillRetry(refused)
        let unlabelled = try metrics.test.expectCounter(
            MetricsObserver.Name.retries, [("http.request.method", "GET"), ("http.response.status_code", "200")])
        #expect(unlabelled.totalValue == 1)
    }

    @Test("the activity indicator counts no activity while a task waits out a retry's delay, pauses included")
    func activityIndicatorRetryDelay() {
        let clock = ManualScheduler()
        let indicator = NetworkActivityIndicator(activationDelay: 1, completionDelay: 0.17, scheduler: clock)
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        indicator.taskWillRetry(Payloads.retry(task: 1, delay: 30))
        #expect(indicator.state == .delayingEnd)
        #expect(indicator.runningTaskCount == 1)
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        // Paused and resumed within the delay: the delay runs on, still no activity.
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.state == .notActive)
        // The delay passes: the next attempt runs, and counts as activity.
        clock.advance(by: 30)
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        // A retry at once is no pause in the activity.
        indicator.taskWillRetry(Payloads.retry(task: 1, delay: 0))
        #expect(indicator.state == .active)
        // A task completing during its delay leaves a stale timer that changes nothing.
        indicator.taskWillRetry(Payloads.retry(task: 1, delay: 5))
        indicator.taskDidComplete(Payloads.complete(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 2))
        #expect(indicator.state == .active)
        indicator.taskWillRetry(Payloads.retry(task: 2, delay: 10))
        clock.advance(by: 5)
        #expect(indicator.state == .notActive)
        clock.advance(by: 5)
        #expect(indicator.state == .delayingStart)
    }

    @Test("the metrics observer takes a task waiting out a retry's delay out of active requests until it passes")
    func activeRequestsDuringRetryDelay() throws {
        let metrics = CountingMetrics()
        let clock = ManualScheduler()
        let observer = MetricsObserver(factory: metrics, scheduler: clock)
        let task = try tasks.task("http://127.0.0.1/a")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, MetricsObserverTests.target())
        #expect(active.lastValue == 1)
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary, delay: 2))
        #expect(active.lastValue == 0)
        // Paused and resumed within the delay: still not active.
        observer.taskDidSuspend(Payloads.suspend(task: 1, request: task.summary))
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        #expect(active.lastValue == 0)
        clock.advance(by: 2)
        #expect(active.lastValue == 1)
        // A retry at once changes nothing; a delay ended by completion leaves a stale timer.
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary, delay: 0))
        #expect(active.lastValue == 1)
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary, delay: 3))
        #expect(active.lastValue == 0)
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url)))
        #expect(active.lastValue == 0)
        clock.advance(by: 3)
        #expect(active.lastValue == 0)
        // Suspended when the delay ends: it counts again only when resumed.
        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        observer.taskWillRetry(Payloads.retry(task: 2, request: task.summary, delay: 1))
        observer.taskDidSuspend(Payloads.suspend(task: 2, request: task.summary))
        clock.advance(by: 1)
        #expect(active.lastValue == 0)
        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary))
        #expect(active.lastValue == 1)
    }

    @Test("a retry delivered late is timed from when it was posted: what is left of its delay, or none")
    func lateRetryDelivery() throws {
        let metrics = CountingMetrics()
        let clock = ManualScheduler()
        let observer = MetricsObserver(factory: metrics, scheduler: clock)
        let indicator = NetworkActivityIndicator(activationDelay: 0, completionDelay: 0, scheduler: clock)
        let task = try tasks.task("http://127.0.0.1/a")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        indicator.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        clock.advance(by: 0)
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, MetricsObserverTests.target())
        #expect(active.lastValue == 1)
        #expect(indicator.state == .active)
        // Posted 1.5 s ago with a 2 s delay: half a second of it is left.
        let late = Payloads.retry(task: 1, request: task.summary, delay: 2, date: Date().addingTimeInterval(-1.5))
        observer.taskWillRetry(late)
        indicator.taskWillRetry(late)
        clock.advance(by: 0)
        #expect(active.lastValue == 0)
        #expect(indicator.state == .notActive)
        clock.advance(by: 0.6)
        #expect(active.lastValue == 1)
        #expect(indicator.state == .active)
        // Posted 3 s ago with a 2 s delay: the next attempt runs already; nothing stops counting.
        let past = Payloads.retry(task: 1, request: task.summary, delay: 2, date: Date().addingTimeInterval(-3))
        observer.taskWillRetry(past)
        indicator.taskWillRetry(past)
        #expect(active.lastValue == 1)
        #expect(indicator.state == .active)
    }

    @Test("remainingDelay: the delay less the time since the decision, never below 0")
    func remainingDelay() throws {
        let posted = Date(timeIntervalSince1970: 1_000)
        let retry = Payloads.retry(task: 1, delay: 2, date: posted).userInfo
        #expect(retry.remainingDelay(at: posted) == 2)
        #expect(retry.remainingDelay(at: posted.addingTimeInterval(0.5)) == 1.5)
        #expect(retry.remainingDelay(at: posted.addingTimeInterval(5)) == 0)
        // A clock that went back counts as no time passed.
        #expect(retry.remainingDelay(at: posted.addingTimeInterval(-5)) == 2)
        #expect(Payloads.retry(task: 1, delay: 0, date: posted).userInfo.remainingDelay(at: posted) == 0)
    }

    @Test("the tracing observer records a herald.task.retry event on the task's span")
    func spanEvent() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://example.com/a")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskWillRetry(Payloads.retry(task: 1, request: task.summary, delay: 0.25))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url)))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.events.map(\.name) == ["herald.task.retry"])
        let event = try #require(span.events.first)
        #expect(event.attributes.get("herald.retry.attempt") == .int64(2))
        #expect(event.attributes.get("herald.retry.delay") == .double(0.25))
        #expect(event.attributes.get("error.type") == .string("503"))
        #expect(event.attributes.get("http.response.status_code") == .int64(503))
        #expect(span.status == nil)
    }

    @Test("the JSON-lines log writes a herald.task.retry line with attempt and delay")
    func jsonLine() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        let task = try tasks.task("http://example.com/a")
        log.taskWillRetry(Payloads.retry(task: 3, session: 2, request: task.summary, attempt: 3, delay: 0.1234))
        await log.flush()
        let line = output.text
        #expect(line.hasSuffix("\n"))
        let record = try JSONDecoder().decode(EventRecord.self, from: Data(line.utf8))
        #expect(record.event == "herald.task.retry")
        #expect(record.task == 3 && record.session == 2)
        #expect(record.attempt == 3)
        #expect(record.delay == 0.123)
        #expect(record.status == 503)
        #expect(record.error == "unacceptable_status_code")
        #expect(record.method == "GET")
    }

    @Test("a delay that is not a number (a payload made by hand) still writes its line, the delay as a string")
    func nonFiniteDelay() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        let task = try tasks.task("http://example.com/a")
        log.taskWillRetry(Payloads.retry(task: 1, request: task.summary, delay: .nan))
        await log.flush()
        // Before, the encoder threw and the line was dropped, uncounted.
        #expect(output.text.contains(#""delay":"NaN""#), "\(output.text)")
        #expect(output.text.hasSuffix("\n"))
    }
}
