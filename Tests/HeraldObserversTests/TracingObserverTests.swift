import Foundation
import Herald
import HeraldObservers
import InMemoryTracing
import Testing
import Tracing

@Suite("Tracing observer")
struct TracingObserverTests {
    let tasks = OfflineTasks()

    @Test("an observer released while a task runs ends that task's span, with an error status")
    func releasedObserverEndsOpenSpans() throws {
        let tracer = InMemoryTracer()
        var observer: TracingObserver<InMemoryTracer>? = TracingObserver(tracer: tracer)
        let task = try tasks.task("https://127.0.0.1/v1/items")
        observer?.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        #expect(tracer.activeSpans.count == 1)
        observer = nil
        #expect(tracer.activeSpans.isEmpty)
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.status?.code == .error)
    }

    @Test("two observers' started spans are told apart: neither takes one of its own for the other's task")
    func startedSpansOfTwoObservers() throws {
        let (tracerA, tracerB) = (InMemoryTracer(), InMemoryTracer())
        let (a, b) = (TracingObserver(tracer: tracerA), TracingObserver(tracer: tracerB))
        let url = URL(string: "https://127.0.0.1/v1/items")!
        _ = b.startSpan(for: Request(url: url))  // B's, for a request not sent yet
        let request = a.startSpan(for: Request(url: url))
        let task = try tasks.session.dataTask(with: request)
        // Both observe the center A's task resumes on.
        a.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        b.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        let response = Payloads.response(200, url: url)
        a.taskDidComplete(Payloads.complete(task: 1, request: task.summary, response: response))
        b.taskDidComplete(Payloads.complete(task: 1, request: task.summary, response: response))
        // B's span for its own request is still waiting for that request; B traced A's task with a span of its own.
        #expect(tracerB.activeSpans.count == 1)
        #expect(tracerB.finishedSpans.count == 1)
        #expect(tracerA.activeSpans.isEmpty && tracerA.finishedSpans.count == 1)
    }

    @Test("a client span from resume to complete with OpenTelemetry HTTP attributes")
    func clientSpan() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("https://bob:pw@api.example.com/v1/items?q=1")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        #expect(tracer.activeSpans.count == 1)
        observer.taskDidSuspend(Payloads.suspend(task: 1, request: task.summary))
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                metrics: Payloads.metrics(received: 77)))
        #expect(tracer.activeSpans.isEmpty)
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.operationName == "GET")
        #expect(span.kind == .client)
        #expect(span.attributes.get("http.request.method") == .string("GET"))
        #expect(span.attributes.get("url.full") == .string("https://REDACTED:REDACTED@api.example.com/v1/items?q=1"))
        #expect(span.attributes.get("server.address") == .string("api.example.com"))
        #expect(span.attributes.get("server.port") == .int64(443))
        #expect(span.attributes.get("http.response.status_code") == .int64(200))
        #expect(span.attributes.get("http.response.body.size") == .int64(77))
        #expect(span.attributes.get("error.type") == nil)
        #expect(span.status == nil)
        #expect(span.events.map(\.name) == ["herald.task.suspend", "herald.task.resume"])
    }

    @Test("after a redirect to another server, the URL and the server named are the last ones, as the status is")
    func redirectedSpanNamesTheLastServer() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        // Never sent: the task is not resumed, and the observer is handed the notifications.
        let task = try tasks.task("https://127.0.0.1/v1/items")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        let final = try #require(URL(string: "http://127.0.0.2:8080/items?sig=secret"))
        observer.taskDidComplete(
            Payloads.complete(task: 1, request: task.summary, response: Payloads.response(200, url: final)))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes.get("server.address") == .string("127.0.0.2"))
        #expect(span.attributes.get("server.port") == .int64(8080))
        #expect(span.attributes.get("url.scheme") == .string("http"))
        #expect(span.attributes.get("url.full") == .string("http://127.0.0.2:8080/items?sig=REDACTED"))
    }

    @Test("a transport error sets error.type to the code and the status to error")
    func transportError() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://127.0.0.1:9/")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(task: 1, request: task.summary, error: HeraldError(.cannotConnect, "No.")))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes.get("error.type") == .string("cannot_connect"))
        #expect(span.attributes.get("server.port") == .int64(9))
        #expect(span.status?.code == .error)
        #expect(span.errors.count == 1)
    }

    @Test("a 5xx response sets error.type to the status code")
    func serverError() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://example.com/")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(503, url: task.originalRequest.url)))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes.get("error.type") == .string("503"))
        #expect(span.status?.code == .error)
    }

    @Test("a 200 whose body the serializer refused keeps the span's status, with herald.response.refused and the error")
    func refusedResponse() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://127.0.0.1/items")
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                error: HeraldError(.serializationFailed, "The body is not JSON.")))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes.get("error.type") == nil)
        #expect(span.attributes.get("herald.response.refused") == .string("serialization_failed"))
        #expect(span.status?.code != .error)
        #expect(span.errors.count == 1)
    }

    @Test("a task never resumed has no span; invalidation ends spans whose completion never came")
    func noLeakedSpans() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        observer.taskDidComplete(Payloads.complete(task: 1))
        #expect(tracer.finishedSpans.isEmpty)
        observer.taskDidResume(Payloads.resume(task: 2, session: 3))
        observer.sessionDidInvalidate(Payloads.invalidate(session: 3))
        #expect(tracer.activeSpans.isEmpty)
        #expect(tracer.finishedSpans.first?.attributes.get("error.type") == .string("session_invalidated"))
    }

    @Test("a failed download move is an event on the task's span, which then ends with the error")
    func moveFailureEvent() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        observer.taskDidResume(Payloads.resume(task: 5))
        observer.downloadDidFailToMoveFile(Payloads.moveFailure(task: 5))
        observer.taskDidComplete(
            Payloads.complete(
                task: 5,
                error: HeraldError(.downloadMoveFailed, "No such directory.", keptFileURL: URL(fileURLWithPath: "/k"))))
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        let event = try #require(span.events.first)
        #expect(span.events.map(\.name) == ["herald.download.move_failed"])
        #expect(event.attributes.get("error.type") == .string("download_move_failed"))
        #expect(event.attributes.get("herald.download.file") == .string("/tmp/herald/kept.download"))
        #expect(event.attributes.get("herald.download.destination") == .string("/missing/dir/out.bin"))
        #expect(span.attributes.get("error.type") == .string("download_move_failed"))
        #expect(span.status?.code == .error)
    }

    @Test("a move failure of a task without a span records nothing")
    func moveFailureWithoutSpan() {
        let tracer = InMemoryTracer()
        TracingObserver(tracer: tracer).downloadDidFailToMoveFile(Payloads.moveFailure(task: 9))
        #expect(tracer.activeSpans.isEmpty && tracer.finishedSpans.isEmpty)
    }

    @Test("a span started for a request is adopted by its task, and still ends when the task is cancelled unsent")
    func startedSpanAdopted() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let url = try #require(URL(string: "http://example.com/a"))
        let sent = try tasks.session.dataTask(with: observer.startSpan(for: Request(url: url, method: "POST")))
        let unsent = try tasks.session.dataTask(with: observer.startSpan(for: Request(url: url)))
        #expect(tracer.activeSpans.count == 2)
        observer.taskDidResume(Payloads.resume(task: 1, request: sent.summary))
        #expect(tracer.activeSpans.count == 2)
        observer.taskDidComplete(
            Payloads.complete(task: 1, request: sent.summary, response: Payloads.response(201, url: url)))
        observer.taskDidComplete(
            Payloads.complete(task: 2, request: unsent.summary, error: HeraldError(.cancelled, "Cancelled.")))
        #expect(tracer.activeSpans.isEmpty)
        #expect(tracer.finishedSpans.map(\.operationName) == ["POST", "GET"])
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.kind == .client)
        #expect(span.attributes.get("herald.task.id") == .int64(1))
        #expect(span.attributes.get("server.address") == .string("example.com"))
        #expect(span.attributes.get("http.response.status_code") == .int64(201))
        #expect(tracer.finishedSpans.last?.attributes.get("error.type") == .string("cancelled"))
    }

    @Test("the span starts when the task resumed and ends when its transfer ended, not when the handlers ran")
    func spanTimes() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let task = try tasks.task("http://example.com/a")
        let resumed = Date(timeIntervalSince1970: 1_800_000_000)
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary, date: resumed))
        var metrics = Payloads.metrics(total: 0.25)
        metrics.startDate = resumed.addingTimeInterval(0.5)
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                metrics: metrics))
        let span = try #require(tracer.finishedSpans.first)
        // A Date holds seconds in a Double: near 1.8e9 s its resolution is about 240 ns.
        func nanoseconds(_ instant: any TracerInstant) -> Int64 { Int64(instant.nanosecondsSinceEpoch) }
        #expect(abs(nanoseconds(span.startInstant) - 1_800_000_000_000_000_000) < 1_000)
        #expect(abs(nanoseconds(span.endInstant) - 1_800_000_000_750_000_000) < 1_000)

        // Without a transfer (a cache hit): it ends when the task completed, whenever the notification came.
        observer.taskDidResume(Payloads.resume(task: 2, request: task.summary, date: resumed))
        observer.taskDidComplete(
            Payloads.complete(
                task: 2, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                date: resumed.addingTimeInterval(0.2), source: .cache))
        let cached = try #require(tracer.finishedSpans.last)
        #expect(abs(nanoseconds(cached.endInstant) - 1_800_000_000_200_000_000) < 1_000)

        // Registered while the task ran, the observer first sees it resume after its transfer ended (it was
        // suspended over the end): the span ends where it starts, never before.
        observer.taskDidResume(Payloads.resume(task: 3, request: task.summary, date: resumed.addingTimeInterval(2)))
        observer.taskDidComplete(
            Payloads.complete(
                task: 3, request: task.summary, response: Payloads.response(200, url: task.originalRequest.url),
                metrics: metrics))
        let late = try #require(tracer.finishedSpans.last)
        #expect(nanoseconds(late.endInstant) >= nanoseconds(late.startInstant))
        #expect(abs(nanoseconds(late.endInstant) - 1_800_000_002_000_000_000) < 1_000)

        // Cancelled during a retry's delay: the last transfer is the failed attempt, and the span covers the wait
        // up to the cancellation. Before, it ended with the failed attempt, before its own retry.
        observer.taskDidResume(Payloads.resume(task: 4, request: task.summary, date: resumed))
        observer.taskWillRetry(
            Payloads.retry(task: 4, request: task.summary, delay: 2, date: resumed.addingTimeInterval(0.8)))
        observer.taskDidComplete(
            Payloads.complete(
                task: 4, request: task.summary, response: Payloads.response(503, url: task.originalRequest.url),
                error: HeraldError(.cancelled, "Cancelled.", url: task.originalRequest.url), metrics: metrics,
                date: resumed.addingTimeInterval(1.5)))
        let cancelled = try #require(tracer.finishedSpans.last)
        #expect(abs(nanoseconds(cancelled.endInstant) - 1_800_000_001_500_000_000) < 1_000)
    }
}
