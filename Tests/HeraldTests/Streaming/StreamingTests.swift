import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

@Suite("Streamed response bodies: bytes(for:), backpressure, cancellation", .timeLimit(.minutes(2)))
struct StreamingTests {
    static let smallPolicy = StreamBufferPolicy(
        highWatermark: 256 << 10, lowWatermark: 64 << 10, maximumChunkSize: 32 << 10)

    @Test("a streamed body arrives whole and in order; one task resumes and completes, its progress counts every byte")
    func wholeBody() async throws {
        let fixture = try await SessionFixture.make()
        let size = 3 * 1024 * 1024 + 17
        let (response, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/bytes/\(size)")))
        #expect(response.statusCode == 200)
        let received = try await readAll(body).get()
        #expect(received == Data(TestServer.expectedBytes(in: 0..<size)))
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete])
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.error == nil)
        #expect(completion.response?.statusCode == 200)
        // The bytes went to the consumer; the completion carries none.
        #expect(completion.responseData == nil)
        #expect(body.task.downloadProgress.completedUnitCount == Int64(size))
        try await fixture.tearDown()
    }

    @Test(
        "a response that fills the consumer's buffer while the request body still goes out arrives whole once read"
    )
    func responseBeforeRequestBodyEnds() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let upload = 8 * 1024 * 1024
        // The server answers as soon as the head arrives, and reads the body as it comes.
        var request = Request(url: fixture.server.url("/bytes/\(size)?early=1"), timeoutInterval: 30)
        request.method = "POST"
        request.body = Data(count: upload)
        let (response, body) = try await fixture.session.bytes(for: request, bufferPolicy: Self.smallPolicy)
        #expect(response.statusCode == 200)
        // Not read yet: the response stops at the high watermark, and curl goes on sending the body. Reading it
        // once the server has most of the body must continue the response; it stayed paused for good, failing
        // with the idle timeout, when sending the body had taken the consumer as caught up.
        try await fixture.server.waitUntil(timeout: .seconds(30)) { statistics in
            statistics.requests.contains { $0.bodyByteCount >= upload / 2 }
        }
        let received = try await readAll(body).get()
        #expect(received == Data(TestServer.expectedBytes(in: 0..<size)))
        #expect(fixture.server.requests.first?.bodyByteCount == upload)
        try await fixture.tearDown()
    }

    @Test("a body read from two tasks at once: the second to wait fails with invalidRequest; the first reads it all")
    func twoConsumers() async throws {
        let fixture = try await SessionFixture.make()
        // The body is held at a gate before its first byte, so both readers wait at once, whatever the machine's
        // load: the second to ask fails while the first still waits.
        let size = 64 * 1024
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(size)?gate=two-readers&gateAfter=0")))
        let refused = OneShot<HeraldError>()
        let readers = (0..<2).map { _ in
            Task { () throws -> Result<Data, HeraldError> in
                let result = try await readAll(body)
                if case .failure(let error) = result { refused.send(error) }
                return result
            }
        }
        let error = try await refused.value(timeout: .seconds(10))
        #expect(error.code == .invalidRequest)
        fixture.server.openGate("two-readers")
        var results: [Result<Data, HeraldError>] = []
        for reader in readers { results.append(try await reader.value) }
        let received = results.compactMap { try? $0.get() }
        #expect(received == [Data(TestServer.expectedBytes(in: 0..<size))], "\(results)")
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("no element is larger than the policy's maximum chunk size")
    func chunkSizes() async throws {
        let fixture = try await SessionFixture.make()
        let size = 1 << 20
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(size)")), bufferPolicy: Self.smallPolicy)
        var total = 0
        var largest = 0
        for try await chunk in body {
            total += chunk.count
            largest = max(largest, chunk.count)
        }
        #expect(total == size)
        #expect(largest <= Self.smallPolicy.maximumChunkSize)
        try await fixture.tearDown()
    }

    @Test(
        "a consumer that stops reading pauses receiving at the high watermark: the server's sends block, nothing is posted"
    )
    func backpressure() async throws {
        let fixture = try await SessionFixture.make()
        let size = 64 << 20
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(size)")), bufferPolicy: Self.smallPolicy)
        // Nobody reads: the server must find its socket full.
        try await fixture.server.waitUntil { $0.sendBlockedCount > 0 }
        // Before the write callback pauses it hands over at most one more of curl's reads (64 KiB for a
        // streamed body).
        let limit = Self.smallPolicy.highWatermark + 64 << 10
        #expect(body.consumer.buffer.waitingByteCount <= limit)
        #expect(body.task.downloadProgress.completedUnitCount <= Int64(limit))
        #expect(fixture.server.bodyBytesSent < size)
        #expect(body.task.state == .running)
        #expect(try await readAndCheck(body).get().matches(count: size))
        _ = try await fixture.recorder.waitForCompletions(1)
        // The pauses are the transfer's own: no taskDidSuspend, no second taskDidResume.
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("suspend and resume while the transfer waits for the consumer: every byte once, the user's events posted")
    func suspendWhileWaitingForConsumer() async throws {
        let fixture = try await SessionFixture.make()
        let size = 16 << 20
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(size)")), bufferPolicy: Self.smallPolicy)
        // The server's sends block once the write callback has paused for the consumer, and, on a slow
        // machine, also while the client merely reads slowly: only the first leaves the buffer at its high
        // watermark, which the drain below needs. After that pause the server blocks again, so this is
        // evaluated once more with the transfer held.
        let buffer = body.consumer.buffer
        try await fixture.server.waitUntil { $0.sendBlockedCount > 0 && buffer.isHoldingTransfer }
        body.task.suspend()
        // Draining while suspended asks the engine to continue; the user's pause must stand.
        var iterator = body.makeAsyncIterator()
        var check = PatternCheck()
        while check.offset < Self.smallPolicy.highWatermark - Self.smallPolicy.lowWatermark + 1 {
            guard let chunk = try await iterator.next() else { break }
            check.check(chunk)
        }
        #expect(body.task.state == .suspended)
        body.task.resume()
        while let chunk = try await iterator.next() { check.check(chunk) }
        #expect(check.matches(count: size))
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test(
        "cancelling the consuming Swift task mid-stream ends the transfer within 100 ms, with one complete(cancelled)")
    func cancelConsumer() async throws {
        let fixture = try await SessionFixture.make()
        let (_, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/bytes/\(1 << 30)")))
        let started = OneShot<Void>()
        let consumer = Task { () -> HeraldError? in
            var count = 0
            do throws(HeraldError) {
                for try await chunk in body {
                    count += chunk.count
                    if count >= 1 << 20 { started.send(()) }
                }
                return nil
            } catch {
                return error
            }
        }
        try await started.value()
        let cancelled = ContinuousClock.now
        consumer.cancel()
        _ = try await fixture.recorder.waitForCompletions(1)
        let elapsed = ContinuousClock.now - cancelled
        print("cancel to taskDidComplete: \(elapsed)")
        #expect(elapsed < .milliseconds(100))
        #expect(await consumer.value?.code == .cancelled)
        try await fixture.server.waitForOpenConnections(0)
        fixture.session.invalidate(cancelingTasks: false)
        _ = try await fixture.recorder.waitForInvalidation()
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete, .invalidate])
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("task.cancel() with chunks waiting for the consumer: the next element is cancelled, none of those chunks")
    func cancelDropsWaitingChunks() async throws {
        let fixture = try await SessionFixture.make()
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(16 << 20)")), bufferPolicy: Self.smallPolicy)
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        // The consumer falls behind: the transfer fills the buffer to its high watermark and waits.
        let buffer = body.consumer.buffer
        try await fixture.server.waitUntil { _ in buffer.isHoldingTransfer }
        #expect(buffer.waitingByteCount > 0)
        body.task.cancel()
        // Before, the chunks that waited kept coming until the task's completion reached the buffer.
        do throws(HeraldError) {
            let chunk = try await iterator.next()
            Issue.record("an element after the cancel: \(chunk?.count ?? 0) bytes")
        } catch {
            #expect(error.code == .cancelled)
        }
        #expect(buffer.waitingByteCount == 0)
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("the chunk closure that cancels its task gets no further chunk, then complete with cancelled")
    func chunkClosureCancels() async throws {
        let fixture = try await SessionFixture.make()
        let events = Locked<[String]>([])
        let done = OneShot<Void>()
        let holder = Locked<DataTask?>(nil)
        let task = try fixture.session.dataStreamTask(
            with: Request(url: fixture.server.url("/bytes/\(16 << 20)")), bufferPolicy: Self.smallPolicy
        ) { event in
            switch event {
            case .response: events.withLock { $0.append("response") }
            case .chunk:
                events.withLock { $0.append("chunk") }
                // Stop after the first: one read of libcurl's is several elements, so more are waiting.
                holder.withLock { $0 }?.cancel()
            case .complete(let error):
                events.withLock { $0.append("complete \(error?.code.description ?? "without error")") }
                done.send(())
            }
        }
        holder.withLock { $0 = task }
        task.resume()
        try await done.value()
        #expect(events.withLock { $0 } == ["response", "chunk", "complete cancelled"])
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("dropping the sequence before its end cancels the task")
    func dropCancels() async throws {
        let fixture = try await SessionFixture.make()
        do {
            let (_, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/bytes/\(1 << 30)")))
            var iterator = body.makeAsyncIterator()
            #expect(try await iterator.next() != nil)
        }
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(events.last?.completion?.error?.code == .cancelled)
        try await fixture.server.waitForOpenConnections(0)
        try await fixture.tearDown()
    }

    @Test("a connection closed mid-body: the bytes that arrived, then networkConnectionLost; never retried")
    func lostMidBody() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let (response, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/fault/truncated?declared=200000&sent=100000")))
        #expect(response.statusCode == 200)
        var received = Data()
        var failure: HeraldError?
        do throws(HeraldError) {
            for try await chunk in body { received.append(chunk) }
        } catch {
            failure = error
        }
        #expect(failure?.code == .networkConnectionLost)
        #expect(received == Data(TestServer.expectedBytes(in: 0..<received.count)))
        #expect(received.count == 100_000)
        _ = try await fixture.recorder.waitForCompletions(1)
        // The consumer had the head: a retry would put a second response's bytes behind the first's.
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete])
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("a retry before the head reached the consumer is allowed: the stream is the retried response's")
    func retryBeforeFirstByte() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = RetryPolicy.fast
        let (response, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/flaky?key=stream-retry&fail=1&status=503")))
        #expect(response.statusCode == 200)
        let text = String(decoding: try await readAll(body).get(), as: UTF8.self)
        #expect(text.contains("\"attempt\":2"))
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .retry, .complete])
        try await fixture.tearDown()
    }

    @Test("redirects are followed before the head is handed over: only the final body streams")
    func redirects() async throws {
        let fixture = try await SessionFixture.make()
        let (response, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/redirect/2")))
        #expect(response.statusCode == 200)
        #expect(response.url.path == "/redirect/0")
        #expect(String(decoding: try await readAll(body).get(), as: UTF8.self) == "redirected\n")
        try await fixture.tearDown()
    }

    @Test("a status of 300 or more is handed over at completion, with its body; any status is a success")
    func errorStatusHeld() async throws {
        let fixture = try await SessionFixture.make()
        let (response, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/status/404")))
        #expect(response.statusCode == 404)
        // The head came after the task completed, the body held until then.
        #expect(body.task.state == .completed)
        let text = String(decoding: try await readAll(body).get(), as: UTF8.self)
        #expect(text.contains("404"))
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error == nil)
        try await fixture.tearDown()
    }

    @Test("a failure before any response throws from bytes(for:)")
    func failureBeforeHead() async throws {
        let fixture = try await SessionFixture.make()
        let call = startCall { () async throws(HeraldError) in
            try await fixture.session.bytes(for: Request(url: fixture.server.url("/fault/reset-before-headers")))
        }
        let result = try await outcome(of: call)
        if case .failure(let error) = result {
            #expect(error.code == .networkConnectionLost || error.code == .badServerResponse)
        } else {
            Issue.record("bytes(for:) returned a head for a connection reset before its head")
        }
        try await fixture.tearDown()
    }

    @Test("a buffer policy that can't work is an invalidRequest before anything is sent")
    func invalidPolicy() async throws {
        let fixture = try await SessionFixture.make()
        let policy = StreamBufferPolicy(highWatermark: 10, lowWatermark: 20)
        let call = startCall { () async throws(HeraldError) in
            try await fixture.session.bytes(for: Request(url: fixture.server.url("/text")), bufferPolicy: policy)
        }
        if case .failure(let error) = try await outcome(of: call) {
            #expect(error.code == .invalidRequest)
        } else {
            Issue.record("an impossible policy was accepted")
        }
        #expect(fixture.server.requestCount == 0)
        try await fixture.tearDown()
    }

    @Test("lines splits at LF, CR and CRLF, across chunks")
    func lines() async throws {
        let fixture = try await SessionFixture.make()
        let (_, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/events/2?size=3")))
        var lines: [String] = []
        for try await line in body.lines { lines.append(line) }
        #expect(lines == ["id: 1", "event: tick", "data: 1 x", "", "id: 2", "event: tick", "data: 2 x", ""])
        try await fixture.tearDown()
    }

    @Test("a line longer than lines(maximumLength:) ends the lines with responseTooLarge, after the lines before it")
    func lineTooLong() async throws {
        let fixture = try await SessionFixture.make()
        // A stream far longer than its buffer: still running when the long line is found.
        let (_, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/events/100000?size=1000")))
        var lines: [String] = []
        var failure: HeraldError?
        do throws(HeraldError) {
            for try await line in body.lines(maximumLength: 20) { lines.append(line) }
        } catch {
            failure = error
        }
        // "data: " and 1,000 bytes is the first line over 20.
        #expect(lines == ["id: 1", "event: tick"])
        #expect(failure?.code == .responseTooLarge)
        // The transfer is stopped, not left running, and completes with the error. Before, as cancelled.
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error?.code == .responseTooLarge)
        try await fixture.tearDown()
    }

    @Test("the chunk closure gets the response, every byte in order, then complete, on the completion queue")
    func chunkClosure() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 << 20
        let events = Locked<[DataStreamEvent]>([])
        let done = OneShot<Void>()
        let session = fixture.session
        let task = try session.dataStreamTask(
            with: Request(url: fixture.server.url("/bytes/\(size)")), bufferPolicy: Self.smallPolicy
        ) { event in
            dispatchPrecondition(condition: .onQueue(session.completionQueue))
            events.withLock { $0.append(event) }
            if case .complete = event { done.send(()) }
        }
        task.resume()
        // 64 hand-offs to the completion queue and the cooperative pool: a whole-suite sanitized run on two cores,
        // every suite's transfers on one loop thread, took longer than 20 s once (a read of the buffer's pause and
        // resume found no way for it to stall: the transfer is never timed out while it waits for its consumer).
        try await done.value(timeout: .seconds(60))
        let all = events.withLock { $0 }
        guard case .response(let response) = all.first else {
            Issue.record("the first event is not the response: \(all.first.map { "\($0)" } ?? "none")")
            return
        }
        #expect(response.statusCode == 200)
        guard case .complete(let error) = all.last else {
            Issue.record("the last event is not complete")
            return
        }
        #expect(error == nil)
        var received = Data()
        for case .chunk(let chunk) in all { received.append(chunk) }
        #expect(received == Data(TestServer.expectedBytes(in: 0..<size)))
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete])
        try await fixture.tearDown()
    }
}
