import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Session and task hooks")
struct SessionHookTests {
    @Test("sessionDidBecomeInvalid is called once, after the last completion and just before sessionDidInvalidate")
    func sessionDidBecomeInvalid() async throws {
        let fixture = try await SessionFixture.make()
        let calls = Collected<(identifier: Int, error: HeraldError?, seenBefore: [String])>()
        let recorder = fixture.recorder
        fixture.session.sessionDidBecomeInvalid = { session, error in
            calls.append((session.identifier, error, recorder.timeline))
        }
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        task.resume()
        fixture.session.invalidate(cancelingTasks: false)
        fixture.session.invalidate(cancelingTasks: false)
        try await fixture.recorder.waitForInvalidation()
        let id = task.taskIdentifier
        #expect(fixture.recorder.timeline == ["resume#\(id)", "complete#\(id)", "invalidate"])
        #expect(calls.all.count == 1)
        let call = try #require(calls.all.first)
        #expect(call.identifier == fixture.session.identifier)
        #expect(call.error == nil)
        // Called before the notification was posted, after the task's completion was.
        #expect(call.seenBefore == ["resume#\(id)", "complete#\(id)"])
        try await fixture.server.shutdown()
    }

    @Test("taskDidComplete runs on the completion queue just before the completion handler, with the transfer's error")
    func taskDidComplete() async throws {
        let fixture = try await SessionFixture.make()
        let log = OrderedLog()
        let recorder = fixture.recorder
        fixture.session.completionQueue.setSpecific(key: CompletionLog.queueKey, value: "completion")
        fixture.session.taskDidComplete = { task, error in
            let queue = DispatchQueue.getSpecific(key: CompletionLog.queueKey) ?? "?"
            // The task's own error says the same already, before its completion handler ran.
            let own = task.error?.code.description ?? "nil"
            log.append(
                "hook#\(task.taskIdentifier) \(error?.code.description ?? "nil") \(own) \(queue) "
                    + "\(recorder.completions.count)")
        }
        // A 404 is an HTTP response: no transfer error for the hook, though the JSON serializer fails it.
        let ok = try fixture.session.dataTask(with: Request(url: fixture.server.url("/status/404"))) { _, _, error in
            log.append("handler#ok \(error?.code.description ?? "nil")")
        }
        ok.resume()
        try await fixture.recorder.waitForCompletions(1)
        let cancelled = try fixture.session.dataTask(with: Request(url: fixture.server.url("/fault/stall"))) {
            _, _, error in
            log.append("handler#cancelled \(error?.code.description ?? "nil")")
        }
        cancelled.resume()
        try await fixture.server.waitForRequests(count: 2)
        cancelled.cancel()
        try await fixture.recorder.waitForCompletions(2)
        #expect(
            log.all == [
                "hook#\(ok.taskIdentifier) nil nil completion 0", "handler#ok unacceptable_status_code",
                "hook#\(cancelled.taskIdentifier) cancelled cancelled completion 1", "handler#cancelled cancelled",
            ])
        // Completed by its cancel at once: its error says so as soon as its state does, before any handler ran.
        let never = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        never.cancel()
        #expect(never.state == .completed)
        #expect(never.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("taskDidSendBodyData reports every piece of an upload, in order, before the completion handler")
    func taskDidSendBodyData() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let calls = Collected<(task: Int, sent: Int64, total: Int64, expected: Int64?)>()
        let log = OrderedLog()
        fixture.session.taskDidSendBodyData = { task, sent, total, expected in
            calls.append((task.taskIdentifier, sent, total, expected))
            log.append("sent")
        }
        let body = Data(repeating: 7, count: 300_000)
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/status/200"), method: "POST"), from: body,
            completionHandler: { _, _, _ in log.append("handler") })
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let all = calls.all
        #expect(all.count >= 2)
        #expect(all.allSatisfy { $0.task == task.taskIdentifier && $0.expected == 300_000 && $0.sent > 0 })
        #expect(all.map(\.sent).reduce(0, +) == 300_000)
        #expect(all.last?.total == 300_000)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.total + $1.sent == $1.total })
        #expect(log.all.last == "handler")
        #expect(log.all.filter { $0 == "handler" }.count == 1)
        #expect(fixture.server.requests.first?.bodyByteCount == 300_000)
        try await fixture.tearDown()
    }

    @Test("dataTaskDidReceiveData gets every chunk of the body, in order, before the completion handler")
    func dataTaskDidReceiveData() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let chunks = Collected<Data>()
        let log = OrderedLog()
        let seenTasks = Collected<Int>()
        fixture.session.dataTaskDidReceiveData = { task, data in
            seenTasks.append(task.taskIdentifier)
            chunks.append(data)
            log.append("data")
        }
        let count = 200_000
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=16384"))
        ) { _, object, _ in
            log.append("handler \((object as? Data)?.count ?? -1)")
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(chunks.all.count >= 2)
        #expect(Data(chunks.all.joined()) == Data(TestServer.expectedBytes(in: 0..<count)))
        #expect(Set(seenTasks.all) == [task.taskIdentifier])
        #expect(log.all.last == "handler \(count)")
        #expect(log.all.filter { $0.hasPrefix("handler") }.count == 1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a task started before dataTaskDidReceiveData was set does not report chunks")
    func dataHookReadAtStart() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let chunks = Collected<Data>()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/1000")))
        task.resume()
        fixture.session.dataTaskDidReceiveData = { _, data in chunks.append(data) }
        try await fixture.recorder.waitForCompletions(1)
        #expect(chunks.all.isEmpty)
        try await fixture.tearDown()
    }
}
