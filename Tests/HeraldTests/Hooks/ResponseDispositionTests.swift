import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("dataTaskDidReceiveResponse")
struct ResponseDispositionTests {
    @Test(".allow: the hook gets the task and the response before any body byte, and the body arrives whole")
    func allow() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let seen = Collected<(task: Int, status: Int, length: Int64?, bytesSoFar: Int64)>()
        fixture.session.dataTaskDidReceiveResponse = { task, response in
            seen.append(
                (
                    task.taskIdentifier, response.statusCode, response.expectedContentLength,
                    task.downloadProgress.completedUnitCount
                ))
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/100000?chunkSize=8192")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(seen.all.count == 1)
        let call = try #require(seen.all.first)
        #expect(call.task == task.taskIdentifier && call.status == 200 && call.length == 100_000)
        #expect(call.bytesSoFar == 0)
        #expect(log.all.count == 1)
        #expect((log.all.first?.object as? Data) == Data(TestServer.expectedBytes(in: 0..<100_000)))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("the hook runs when the head arrives: the server holds the body back until the hook has run")
    func atTheHead() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let asked = OneShot<Void>()
        fixture.session.dataTaskDidReceiveResponse = { _, _ in
            asked.send(())
            return .allow
        }
        let log = CompletionLog()
        // The head goes out at once; the body waits at a gate the test opens once the hook has run. A hook
        // asked only at the first body byte would never run, whatever the machine's load.
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/1000?gate=head&gateAfter=0")), completionHandler: log.handler)
        task.resume()
        try await asked.value()
        #expect(fixture.server.requests(forPath: "/bytes/1000").first?.bodyBytesSent == 0)
        fixture.server.openGate("head")
        try await fixture.recorder.waitForCompletions(1)
        #expect((log.all.first?.object as? Data) == Data(TestServer.expectedBytes(in: 0..<1000)))
        try await fixture.tearDown()
    }

    @Test("a head-only answer: the hook's .cancel still cancels a body-less response")
    func bodyLessCancel() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .cancel }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/status/204")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("a streamed body's head is handed over when it arrives, before the first body byte")
    func streamedHeadAtTheHead() async throws {
        let fixture = try await SessionFixture.make()
        // The server holds the body at a gate until the test has the head: `bytes(for:)` returning at all,
        // with nothing of the body sent, shows the head was handed over first, however busy the machine.
        let request = Request(url: fixture.server.url("/events/2?gate=streamed-head"))
        let head = OneShot<Result<HTTPResponse, HeraldError>>()
        let consumer = Task {
            do throws(HeraldError) {
                let (response, body) = try await fixture.session.bytes(for: request)
                head.send(.success(response))
                var count = 0
                for try await chunk in body { count += chunk.count }
                return count
            } catch {
                head.send(.failure(error))
                return -1
            }
        }
        let response = try await head.value().get()
        #expect(response.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/events/2").first?.bodyBytesSent == 0)
        fixture.server.openGate("streamed-head")
        #expect(await consumer.value > 0)
        try await fixture.tearDown()
    }

    @Test(".cancel: the task completes once with cancelled and no body")
    func cancel() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .cancel }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/1000000?chunkSize=8192&delayMs=20")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(task.downloadProgress.completedUnitCount == 0)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a response without a body is answered before the task completes", arguments: ["allow", "cancel"])
    func bodyless(answer: String) async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let order = OrderedLog()
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            order.append("hook \(response.statusCode)")
            return answer == "allow" ? .allow : .cancel
        }
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/empty"))) { _, _, error in
            order.append("handler \(error?.code.description ?? "ok")")
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(order.all == ["hook 204", "handler \(answer == "allow" ? "ok" : "cancelled")"])
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a HEAD request's response is answered too")
    func head() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let calls = Collected<Int>()
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            calls.append(response.statusCode)
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/5000"), method: "HEAD"), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(calls.all == [200])
        #expect(log.all.count == 1 && log.all.first?.error == nil)
        try await fixture.tearDown()
    }

    /// Starts a data task of `path` whose response hook suspends it and answers `.allow`, and returns once
    /// that answer has been applied: the hook's block has finished and the engine has run what it queued.
    private func suspendedByTheHook(
        _ fixture: SessionFixture, path: String
    ) async throws -> (DataTask, CompletionLog) {
        let asked = OneShot<Void>()
        fixture.session.dataTaskDidReceiveResponse = { task, _ in
            task.suspend()
            asked.send(())
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url(path)), completionHandler: log.handler)
        task.resume()
        try await asked.value()
        await fixture.session.completionQueueBarrier()
        await fixture.session.engineBarrier()
        await fixture.session.engineBarrier()
        return (task, log)
    }

    @Test("a suspend while the hook runs is not undone by .allow; the user's resume continues the body")
    func suspendWhileWaiting() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let count = 300_000
        let (task, log) = try await suspendedByTheHook(fixture, path: "/bytes/\(count)?chunkSize=16384")
        #expect(task.state == .suspended)
        #expect(task.downloadProgress.completedUnitCount == 0)
        #expect(log.all.isEmpty)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1)
        #expect((log.all.first?.object as? Data) == Data(TestServer.expectedBytes(in: 0..<count)))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a suspend while a body-less response waits holds the completion until resume")
    func suspendBodylessWhileWaiting() async throws {
        let fixture = try await SessionFixture.make()
        let (task, log) = try await suspendedByTheHook(fixture, path: "/empty")
        #expect(task.state == .suspended)
        #expect(log.all.isEmpty)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1)
        #expect(log.all.first?.response?.statusCode == 204)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a cancel while the hook runs wins over .allow")
    func cancelWhileWaiting() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.dataTaskDidReceiveResponse = { task, _ in
            task.cancel()
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/100000")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1 && log.all.first?.error?.code == .cancelled)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test(
        "the async data(for:) fails clearly when the hook answers .becomeDownload, a failure no retrier is asked about")
    func asyncRefusesBecomeDownload() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        // A retrier that retries everything: the same request would meet the same answer, again and again.
        let asked = Locked(0)
        fixture.session.interceptor = Interceptor(retry: { _ in
            asked.withLock { $0 += 1 }
            return .retry
        })
        await #expect {
            _ = try await fixture.session.data(for: Request(url: fixture.server.url("/bytes/1000")))
        } throws: { error in
            (error as? HeraldError)?.code == .invalidRequest
        }
        #expect(fixture.session.downloadTasks.isEmpty)
        // Before, the retrier was asked, and the request sent again for as long as it said so.
        #expect(asked.withLock { $0 } == 0)
        #expect(fixture.server.requests(forPath: "/bytes/1000").count == 1)
        try await fixture.tearDown()
    }
}

extension ResponseDispositionTests {
    @Test("a body-less answer held for a hook slower than the resource timeout fails with timedOut at the timeout")
    func heldAnswerKeepsResourceTimeout() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForResource = 1
        let fixture = try await SessionFixture.make(configuration: configuration)
        // The hook answers only once the task has completed (or after 30 s): a 204 has no body, so libcurl is
        // done with the transfer and its own timeout no longer runs; the engine holds the result for the answer.
        let completed = DispatchSemaphore(value: 0)
        fixture.session.dataTaskDidReceiveResponse = { _, _ in
            _ = completed.wait(timeout: .now() + 30)
            return .allow
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/empty")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(20))
        completed.signal()
        // It completed without an error when the hook answered, however late, before.
        #expect(log.all.first?.error?.code == .timedOut, "\(log.all)")
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }
}
