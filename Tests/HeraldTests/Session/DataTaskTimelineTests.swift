import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Data task lifecycle timelines")
struct DataTaskTimelineTests {
    @Test("a GET posts exactly resume then complete, after the completion handler ran once")
    func getTimeline() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        fixture.session.completionQueue.setSpecific(key: CompletionLog.queueKey, value: "completion")
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/json")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline == ["resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)"])
        #expect(log.all.count == 1)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        #expect(call.object as? JSONValue? == .some(["hello": "world", "n": 1]))
        #expect(call.queueMarker == "completion")
        #expect(task.state == .completed)
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error == nil)
        #expect(completion.response?.statusCode == 200)
        #expect(completion.finalURL == fixture.server.url("/json"))
        #expect(completion.responseData == Data(#"{"hello":"world","n":1}"#.utf8))
        #expect(completion.responseSerializer is JSONResponseSerializer)
        let metrics = try #require(completion.metrics)
        #expect(metrics.total > 0)
        #expect(metrics.timeToFirstByte <= metrics.total)
        #expect(metrics.connect <= metrics.timeToFirstByte)
        #expect(metrics.responseBodyBytes == 23)
        #expect(metrics.remotePort == fixture.server.port)
        #expect(metrics.connectionReused == false)
        #expect(metrics.httpVersion == "HTTP/1.1")
        // One transfer: the task's metrics are the payload's, and its list of hops holds just them.
        #expect(task.metrics == metrics)
        #expect(task.hopMetrics == [metrics])
        try await fixture.tearDown()
    }

    @Test("100 resume() calls post taskDidResume once")
    func hundredResumes() async throws {
        let fixture = try await SessionFixture.make()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/text")))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { task.resume() } }
        }
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("resume, suspend, resume gives exactly resume, suspend, resume, complete")
    func resumeSuspendResume() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        // The body waits at a gate until the task has been suspended and resumed: on a busy machine the whole
        // transfer could otherwise finish before suspend() is called, and the task complete unsuspended.
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/100000?gate=resume-suspend-resume")),
            completionHandler: log.handler)
        task.resume()
        task.suspend()
        task.suspend()
        try await fixture.recorder.waitUntil { $0.count >= 2 }
        task.resume()
        fixture.server.openGate("resume-suspend-resume")
        try await fixture.recorder.waitForCompletions(1)
        let id = task.taskIdentifier
        #expect(fixture.recorder.timeline(ofTask: id) == [.resume, .suspend, .resume, .complete])
        #expect(log.all.count == 1)
        #expect((log.all.first?.object as? Data)?.count == 100_000)
        try await fixture.tearDown()
    }

    @Test("cancel before resume completes with cancelled and never posts taskDidResume")
    func cancelBeforeResume() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/json")), completionHandler: log.handler)
        task.cancel()
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline == ["complete#\(task.taskIdentifier)"])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        #expect(fixture.recorder.completions.first?.metrics == nil)
        #expect(fixture.server.requestCount == 0)
        #expect(task.state == .completed)
        try await fixture.tearDown()
    }

    @Test("cancel while suspended gives resume, suspend, complete(cancelled)")
    func cancelWhileSuspended() async throws {
        let fixture = try await SessionFixture.make()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/10000000")))
        task.resume()
        task.suspend()
        task.cancel()
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .complete])
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("cancel() from 100 threads at once completes the task exactly once")
    func cancelFromManyThreads() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/stall")), completionHandler: log.handler)
        task.resume()
        try await fixture.server.waitForRequests(count: 1)
        DispatchQueue.concurrentPerform(iterations: 100) { _ in task.cancel() }
        try await fixture.recorder.waitForCompletions(1)
        // Everything the session would post for this task is posted before its completion, so a second
        // completion would already be recorded if there were one — invalidation proves nothing follows.
        fixture.session.invalidate(cancelingTasks: false)
        try await fixture.recorder.waitForInvalidation()
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("a 500 with the JSON serializer keeps the response data and fails with unacceptableStatusCode")
    func serverErrorWithJSONSerializer() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/status/500")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error?.code == .unacceptableStatusCode)
        #expect(completion.error?.statusCode == 500)
        #expect(completion.response?.statusCode == 500)
        #expect(completion.responseData?.isEmpty == false)
        #expect(completion.serializedResponse == nil)
        #expect(log.all.first?.response?.statusCode == 500)
        #expect(log.all.first?.error?.code == .unacceptableStatusCode)
        try await fixture.tearDown()
    }
}
