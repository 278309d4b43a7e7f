import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

// Serialized: one test's heavy upload would slow the loopback server that another test times.
@Suite("Streamed uploads: the body stream is user code and runs off the engine's loop thread", .serialized)
struct StreamedUploadTests {
    /// The threads a closure ran on: whether each was the engine's loop thread, and its names.
    ///
    /// The loop thread is recognised by the engine itself (`Engine.isOnLoopThread` compares pthread ids) and,
    /// as a second check, by name. Its `Thread` is named `herald.engine…`, but the kernel keeps at most 15 bytes
    /// of a thread's name and refuses a longer one, so `Thread.current.name` (which reads the kernel's name
    /// on Linux) or `pthread_getname_np` may show the name the loop thread inherited instead.
    final class ThreadLog: Sendable {
        private let engine: Engine
        private let records = Locked<[(onLoopThread: Bool, names: [String])]>([])

        init(engine: Engine) { self.engine = engine }

        func record() {
            let kernelName = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            let names = [Thread.current.name ?? "", kernelName.trimmingCharacters(in: .whitespacesAndNewlines)]
            let onLoopThread = engine.isOnLoopThread
            records.withLock { $0.append((onLoopThread, names)) }
        }

        var count: Int { records.withLock { $0.count } }

        var names: Set<String> { Set(records.withLock { $0 }.flatMap(\.names)) }

        /// Whether any record was made on the engine's loop thread, or on any thread named `herald.engine…`.
        var ranOnLoopThread: Bool {
            records.withLock { $0 }.contains { $0.onLoopThread || $0.names.contains { $0.hasPrefix("herald.engine") } }
        }
    }

    /// A stream of the test server's pattern bytes `0..<count` that records the threads its reads run on.
    static func patternStream(count: Int, threads: ThreadLog, beforeRead: (@Sendable (Int) -> Void)? = nil)
        -> BodyStream
    {
        let offset = Locked(0)
        return BodyStream { buffer in
            threads.record()
            let start = offset.withLock { $0 }
            beforeRead?(start)
            let length = min(buffer.count, count - start)
            guard length > 0 else { return 0 }
            for index in 0..<length { buffer[index] = UInt8((start + index) % 251) }
            offset.withLock { $0 += length }
            return length
        }
    }

    static func echoed(_ call: CompletionLog.Call?) throws -> EchoedRequest {
        try JSONDecoder().decode(EchoedRequest.self, from: try #require(call?.object as? Data))
    }

    @Test("the thread check recognises the loop thread")
    func loopThreadIsRecognised() async throws {
        let fixture = try await SessionFixture.make()
        let threads = ThreadLog(engine: fixture.session.engine)
        let ran = OneShot<Void>()
        fixture.session.engine.execute {
            threads.record()
            ran.send(())
        }
        try await ran.value()
        #expect(threads.ranOnLoopThread, "the loop thread is named \(threads.names)")
        try await fixture.tearDown()
    }

    @Test("a body stream's read never runs on the loop thread, and the body arrives intact")
    func readsOffTheLoopThread() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let threads = ThreadLog(engine: fixture.session.engine)
        let size = 300_000
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"),
            bodyProvider: Self.patternStream(count: size, threads: threads), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error == nil)
        #expect(try Self.echoed(log.all.first).bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(threads.count > 0)
        #expect(!threads.ranOnLoopThread, "reads ran on \(threads.names)")
        try await fixture.tearDown()
    }

    @Test("a body stream that blocks in one read holds back no other transfer on the same engine")
    func blockedReadHoldsBackNothingElse() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let threads = ThreadLog(engine: fixture.session.engine)
        // Another task on the same session (the same engine and connection pool), started by the blocked read
        // itself. The loopback server stamps each request as its head arrives: the other request must reach it
        // while the read still blocks. (Had the read blocked the loop thread, the other transfer could not
        // even start before it returned.) Stamps, not this test's own code or completion handlers, decide: on
        // a busy machine those may run late.
        let otherPath = "/bytes/100000"
        let other = try fixture.session.dataTask(with: Request(url: fixture.server.url(otherPath)))
        // Whether the blocked read was let go because the other request arrived (not by its own time limit).
        let block = Locked<(start: ContinuousClock.Instant, releasedByArrival: Bool?)?>(nil)
        let release = DispatchSemaphore(value: 0)
        // The read is let go whatever happens below (a second signal finds no one waiting).
        defer { release.signal() }
        let size = 200_000
        let stream = Self.patternStream(count: size, threads: threads) { offset in
            guard offset >= 50_000, block.withLock({ $0 }) == nil else { return }
            block.withLock { $0 = (ContinuousClock.now, nil) }
            other.resume()
            // The fault: one read, part-way through the body, blocks until the other request has reached the
            // server, or for 30 s.
            let released = release.wait(timeout: .now() + 30) == .success
            block.withLock { $0?.releasedByArrival = released }
        }
        let uploadLog = CompletionLog()
        let upload = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"), bodyProvider: stream,
            completionHandler: uploadLog.handler)
        upload.resume()
        // The other request reaches the server while the read still blocks: had it blocked the loop thread, the
        // other transfer could not even start, and this wait would end in its timeout.
        try await fixture.server.waitUntil(timeout: .seconds(30)) { statistics in
            statistics.requests.contains { $0.path == otherPath }
        }
        release.signal()

        // Both complete; the upload goes on once its read returns, and the server gets every byte.
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(30))
        let (blockStart, releasedByArrival) = try #require(block.withLock { $0 })
        let arrival = try #require(fixture.server.requests(forPath: otherPath).first?.receivedAt)
        #expect(
            releasedByArrival == true,
            "the other request reached the server \(arrival - blockStart) after the read blocked")
        #expect(other.error == nil)
        #expect(other.response?.statusCode == 200)
        #expect(uploadLog.all.first?.error == nil)
        #expect(try Self.echoed(uploadLog.all.first).bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(!threads.ranOnLoopThread)
        try await fixture.tearDown()
    }

    @Test("a 307 of a streamed upload resends the whole body from the stream taskNeedNewBodyStream provides")
    func redirect307ResendsFromFreshStream() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 1_000_000
        let threads = ThreadLog(engine: fixture.session.engine)
        let hookThreads = ThreadLog(engine: fixture.session.engine)
        let asked = Locked<[Int]>([])
        fixture.session.taskNeedNewBodyStream = { task in
            hookThreads.record()
            asked.withLock { $0.append(task.taskIdentifier) }
            return Self.patternStream(count: size, threads: threads)
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/redirect-to?url=/echo&status=307"), method: "POST"),
            bodyProvider: Self.patternStream(count: size, threads: threads), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        let echoed = try Self.echoed(call)
        #expect(echoed.method == "POST")
        #expect(echoed.bodyLength == size)
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(asked.withLock { $0 } == [task.taskIdentifier])
        #expect(fixture.server.requests(forPath: "/redirect-to").first?.bodyByteCount == size)
        #expect(!threads.ranOnLoopThread)
        #expect(hookThreads.count > 0)
        #expect(!hookThreads.ranOnLoopThread)
        try await fixture.tearDown()
    }

    @Test("a streamed PUT sent again on a fresh connection gets its fresh stream off the loop thread, whole")
    func freshConnectionResendsFromFreshStream() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let path = "/fault/reset-when-reused"
        let size = 200_000
        let threads = ThreadLog(engine: fixture.session.engine)
        let hookThreads = ThreadLog(engine: fixture.session.engine)
        fixture.session.taskNeedNewBodyStream = { _ in
            hookThreads.record()
            return Self.patternStream(count: size, threads: threads)
        }
        // The first request opens the connection the server resets when it is used again.
        _ = try await fixture.session.data(for: Request(url: fixture.server.url(path)))
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url(path), method: "PUT"),
            bodyProvider: Self.patternStream(count: size, threads: threads), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(30))
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 200)
        let puts = fixture.server.requests(forPath: path).filter { $0.method == "PUT" }
        #expect(puts.count == 2)
        #expect(puts.last?.bodyByteCount == size)
        #expect(!threads.ranOnLoopThread)
        // The reset came after body bytes went out: the retry rewound the stream through the hook.
        #expect(hookThreads.count == 1)
        #expect(!hookThreads.ranOnLoopThread)
        try await fixture.tearDown()
    }

    @Test(
        "a streamed upload answered with a Digest challenge is sent again whole, its fresh streams off the loop thread")
    func digestRoundTripResendsFromFreshStreams() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 150_000
        let threads = ThreadLog(engine: fixture.session.engine)
        let hookThreads = ThreadLog(engine: fixture.session.engine)
        fixture.session.sessionDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "carol", password: "digest-pw"))
        }
        fixture.session.taskNeedNewBodyStream = { _ in
            hookThreads.record()
            return Self.patternStream(count: size, threads: threads)
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/auth/digest?user=carol&password=digest-pw"), method: "POST"),
            bodyProvider: Self.patternStream(count: size, threads: threads), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 200)
        let last = try #require(fixture.server.requests(forPath: "/auth/digest").last)
        #expect(last.headerValue("Authorization")?.hasPrefix("Digest ") == true)
        #expect(last.bodyByteCount == size)
        #expect(hookThreads.count > 0)
        #expect(!hookThreads.ranOnLoopThread)
        #expect(!threads.ranOnLoopThread)
        try await fixture.tearDown()
    }

    @Test("a 10 MiB streamed upload arrives intact, read at most a few buffers ahead of the connection")
    func tenMiBInConstantMemory() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 10 * 1024 * 1024
        let threads = ThreadLog(engine: fixture.session.engine)
        // One multipart part of 10 MiB: `/multipart` hashes it as it streams in, so the server checks every
        // byte in constant memory too.
        let boundary = "herald-streamed-upload"
        let head = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"blob\"\r\n\r\n".utf8)
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let total = head.count + size + tail.count
        let offset = Locked(0)
        let handedToCurl = Locked<TransferProgress?>(nil)
        let mostAhead = Locked(0)
        let stream = BodyStream { buffer in
            threads.record()
            let start = offset.withLock { $0 }
            if let progress = handedToCurl.withLock({ $0 }) {
                // Bytes read so far minus bytes curl took so far (counted on the loop thread as curl takes them).
                mostAhead.withLock { $0 = max($0, start - Int(progress.completedUnitCount)) }
            }
            let length = min(buffer.count, total - start)
            for index in 0..<length {
                let position = start + index
                buffer[index] =
                    position < head.count
                    ? head[position]
                    : position < head.count + size
                        ? UInt8((position - head.count) % 251) : tail[position - head.count - size]
            }
            offset.withLock { $0 += length }
            return length
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/multipart"), method: "POST",
                headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"]),
            bodyProvider: stream, completionHandler: log.handler)
        handedToCurl.withLock { $0 = task.uploadProgress }
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        let echoed = try JSONDecoder().decode(EchoedMultipart.self, from: try #require(call.object as? Data))
        #expect(echoed.parts.count == 1)
        #expect(echoed.parts.first?.size == size)
        #expect(echoed.parts.first?.sha256 == TestDigest.sha256(Data(TestServer.expectedBytes(in: 0..<size))))
        #expect(task.uploadProgress.completedUnitCount == Int64(total))
        // The reader's buffer (64 KiB), plus what curl took but the count doesn't show yet.
        #expect(mostAhead.withLock { $0 } <= 256 * 1024, "read \(mostAhead.withLock { $0 }) bytes ahead")
        #expect(!threads.ranOnLoopThread)
        try await fixture.tearDown()
    }

    struct Broken: Error {}

    @Test(
        "a stream that throws part-way, or whose read returns a negative count, fails its task with bodyStream",
        arguments: [true, false])
    func failingStreamFails(throwing: Bool) async throws {
        let fixture = try await SessionFixture.make()
        let sent = Locked(0)
        // 100,000 bytes, then the failure: a thrown error, or -1 (a C-style error, never the body's end).
        let stream = BodyStream { buffer in
            let start = sent.withLock { $0 }
            guard start < 100_000 else {
                if throwing { throw Broken() }
                return -1
            }
            let length = min(buffer.count, 100_000 - start)
            for index in 0..<length { buffer[index] = 7 }
            sent.withLock { $0 += length }
            return length
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"), bodyProvider: stream,
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let error = try #require(log.all.first?.error)
        #expect(error.code == .bodyStream)
        #expect((error.underlying is Broken) == throwing)
        // No cut body sent as whole: the server never answered it.
        #expect(log.all.first?.response == nil)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test(
        "an answer that refuses a streamed upload while its stream has nothing completes the task at once",
        arguments: [413, 401])
    func earlyRefusalWhileTheStreamWaits(status: Int) async throws {
        // Before, libcurl stopped sending on the error status but kept the send direction paused for want of the
        // stream's bytes, and the transfer never ended: the answer was lost to the request timeout.
        let call = try await Self.uploadWhileTheStreamWaits(to: "/flaky?key=early-\(status)&status=\(status)&early=1")
        #expect(call.response?.statusCode == status)
        #expect(call.error == nil || call.error?.code == .unacceptableStatusCode)
    }

    @Test("an answer on a closing connection, its body after its head, completes a streamed upload whose stream waits")
    func earlyAnswerOnClosingConnection() async throws {
        // With `Connection: close` libcurl goes on sending after the head (it pauses again at the stream's next
        // read), and stops only once the answer is read to the close: without a second continuing then, the
        // transfer stayed paused and the task timed out.
        let call = try await Self.uploadWhileTheStreamWaits(to: "/fault/early-close?status=413&bodyDelayMs=100")
        #expect(call.response?.statusCode == 413)
        // The body that came after the head, to the close: the answer whole.
        #expect(call.error?.responseBody == Data("refused\n".utf8))
    }

    /// Uploads to `path` from a stream that has nothing until the upload is over (sending pauses at its first
    /// read, before the server's answer), and returns the completion once the task completed, with one resume
    /// and one complete, within 10 s (its request timeout is 20 s).
    private static func uploadWhileTheStreamWaits(to path: String) async throws -> CompletionLog.Call {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let stream = BodyStream { _ in
            _ = gate.wait(timeout: .now() + .seconds(30))
            return 0
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url(path), method: "POST", timeoutInterval: 20),
            bodyProvider: stream, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(10))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let call = try #require(log.all.first)
        try await fixture.tearDown()
        return call
    }

    @Test("a stream that gives nothing for longer than the request timeout fails its upload with timedOut")
    func stalledStreamTimesOut() async throws {
        let fixture = try await SessionFixture.make()
        let gate = DispatchSemaphore(value: 0)
        // Stalls until the test is over: no byte moves, the loop thread goes on.
        let stream = Self.stallingAfterFirstRead(gate: gate, seconds: 20)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/echo"), method: "POST", timeoutInterval: 0.5),
            bodyProvider: stream, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(15))
        gate.signal()
        #expect(log.all.first?.error?.code == .timedOut)
        try await fixture.tearDown()
    }

    @Test(
        "a streamed upload suspended while its reader waits is resumed after the reader goes on, and sends the whole body"
    )
    func suspendWhileWaitingForTheStream() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 400_000
        let threads = ThreadLog(engine: fixture.session.engine)
        let gate = DispatchSemaphore(value: 0)
        let reachedGate = OneShot<Void>()
        let stream = Self.patternStream(count: size, threads: threads) { offset in
            guard offset == 100_000 - 100_000 % StreamBodyReader.chunk else { return }
            reachedGate.send(())
            _ = gate.wait(timeout: .now() + 20)
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"), bodyProvider: stream,
            completionHandler: log.handler)
        task.resume()
        try await reachedGate.value()
        task.suspend()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        gate.signal()
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error == nil)
        #expect(try Self.echoed(log.all.first).bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test(
        "with a completion queue of the caller's, a stream whose read blocks does not hold back a cancel's completion",
        arguments: [false, true])
    func cancelWhileTheReadBlocks(callersQueue: Bool) async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let session = SessionManager(
            notificationCenter: center, completionQueue: callersQueue ? DispatchQueue(label: "caller") : nil)
        let gate = DispatchSemaphore(value: 0)
        let blocking = OneShot<Void>()
        // Blocks, waiting for a producer, until the test is over.
        let stream = Self.stallingAfterFirstRead(gate: gate, seconds: 30) { blocking.send(()) }
        let log = CompletionLog()
        let task = try session.uploadTask(
            withStreamedRequest: Request(url: server.url("/fault/stall"), method: "PUT"), bodyProvider: stream,
            completionHandler: log.handler)
        task.resume()
        try await blocking.value()
        task.cancel()
        let completedDuringRead: Bool
        do {
            try await recorder.waitForCompletions(1, timeout: .seconds(10))
            completedDuringRead = true
        } catch {
            completedDuringRead = false
        }
        gate.signal()
        #expect(completedDuringRead, "the cancelled upload completed only once its stream's read returned")
        try await recorder.waitForCompletions(1, timeout: .seconds(15))
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    /// A body stream whose first read gives 1000 bytes and whose next one blocks until `gate` is signalled (at
    /// most `seconds`), calling `onStall` as it starts to wait.
    private static func stallingAfterFirstRead(
        gate: DispatchSemaphore, seconds: Int, onStall: @escaping @Sendable () -> Void = {}
    ) -> BodyStream {
        let reads = Locked(0)
        return BodyStream { buffer in
            let read = reads.withLock { count -> Int in
                count += 1
                return count
            }
            guard read > 1 else {
                for index in 0..<1000 { buffer[index] = 1 }
                return 1000
            }
            onStall()
            _ = gate.wait(timeout: .now() + .seconds(seconds))
            return 0
        }
    }
}
