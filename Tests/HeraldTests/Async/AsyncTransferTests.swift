import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("try await forms return the response and the body or file")
struct AsyncTransferTests {
    @Test("data(for:) returns the raw body and the response, and the task posts resume then complete")
    func dataReturnsBody() async throws {
        let fixture = try await SessionFixture.make()
        let (body, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        #expect(response.statusCode == 200)
        #expect(String(decoding: body, as: UTF8.self) == #"{"hello":"world","n":1}"#)
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(events.map(\.kind) == [.resume, .complete])
        #expect(fixture.recorder.completions.first?.error == nil)
        #expect(fixture.recorder.completions.first?.responseData == body)
        try await fixture.tearDown()
    }

    @Test("data(for:) runs the taskDidComplete and body hooks on the completion queue before it returns")
    func dataRunsCompletionQueueHooksFirst() async throws {
        let fixture = try await SessionFixture.make()
        let onCompletionQueue = DispatchSpecificKey<Bool>()
        fixture.session.completionQueue.setSpecific(key: onCompletionQueue, value: true)
        let seen = Locked<[String]>([])
        @Sendable func record(_ name: String) {
            let place = DispatchQueue.getSpecific(key: onCompletionQueue) == true ? "" : " off the completion queue"
            seen.withLock { $0.append(name + place) }
        }
        fixture.session.dataTaskDidReceiveData = { _, _ in record("data") }
        fixture.session.taskDidComplete = { _, _ in record("complete") }
        let (body, _) = try await fixture.session.data(for: Request(url: fixture.server.url("/bytes/100000")))
        #expect(body.count == 100_000)
        let order = seen.withLock { $0 }
        #expect(order.last == "complete")
        #expect(!order.dropLast().isEmpty && order.dropLast().allSatisfy { $0 == "data" })
        try await fixture.tearDown()
    }

    @Test("bytes(for:) resumes a consumer preferring a task executor without calling that executor on the loop thread")
    func streamingResumesPreferringCallerOffLoopThread() async throws {
        let fixture = try await SessionFixture.make()
        let engine = fixture.session.engine
        let executor = ThreadRecordingExecutor { engine.isOnLoopThread }
        // Paced, so the consumer waits for each chunk and the write callback resumes it.
        let url = fixture.server.url("/bytes/65536?chunkSize=4096&delayMs=5")
        let received = try await withTaskExecutorPreference(executor) {
            let (_, body) = try await fixture.session.bytes(for: Request(url: url))
            var received = 0
            for try await chunk in body { received += chunk.count }
            return received
        }
        #expect(received == 65536)
        #expect(executor.enqueued > 0)
        // The executor's enqueue is the caller's code: never on the engine's loop thread.
        #expect(executor.enqueuedOnLoopThread == 0)
        try await fixture.tearDown()
    }

    @Test("data(for:) answers a caller preferring a task executor, and one whose task has a progress sequence")
    func dataAnswersEveryCaller() async throws {
        let fixture = try await SessionFixture.make()
        let executor = GlobalQueueExecutor()
        let (body, _) = try await withTaskExecutorPreference(executor) {
            try await fixture.session.data(for: Request(url: fixture.server.url("/bytes/1000")))
        }
        #expect(body.count == 1000)
        // A progress sequence asked for while the task runs: its handler, and its end, run on the completion
        // queue before data(for:) returns.
        let updates = Locked<TransferProgress.Updates?>(nil)
        let token = fixture.center.addObserver(for: .taskDidResume, delivery: .posting) { note in
            let task = fixture.session.tasks.first { $0.taskIdentifier == note.userInfo.taskIdentifier }
            updates.withLock { $0 = task?.downloadProgressUpdates }
        }
        let (second, _) = try await fixture.session.data(for: Request(url: fixture.server.url("/bytes/1000")))
        #expect(second.count == 1000)
        token.cancel()
        let sequence = try #require(updates.withLock { $0 })
        var last: TransferProgress.Snapshot?
        for await snapshot in sequence { last = snapshot }
        #expect(last?.completedUnitCount == 1000)
        try await fixture.tearDown()
    }

    @Test("data(for:) returns a 404 as a response, not an error, like URLSession")
    func dataReturns404() async throws {
        let fixture = try await SessionFixture.make()
        let (body, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/status/404")))
        #expect(response.statusCode == 404)
        #expect(String(decoding: body, as: UTF8.self) == "404 Not Found\n")
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error == nil)
        try await fixture.tearDown()
    }

    @Test("responseObject(for:) applies the session's serializer, and its validation throws on a 404")
    func responseObjectUsesSerializer() async throws {
        let fixture = try await SessionFixture.make()
        let (object, response) = try await fixture.session.responseObject(
            for: Request(url: fixture.server.url("/json")))
        #expect(response.statusCode == 200)
        #expect(object as? JSONValue == ["hello": "world", "n": 1])
        await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.responseObject(for: Request(url: fixture.server.url("/status/404")))
        }
        try await fixture.tearDown()
    }

    @Test("value(for:serializer:) parses with the given serializer and throws its validation error")
    func valueUsesGivenSerializer() async throws {
        let fixture = try await SessionFixture.make()
        let (text, _) = try await fixture.session.value(
            for: Request(url: fixture.server.url("/text")), serializer: StringResponseSerializer())
        #expect(text == "Hello, Herald!\n")
        do {
            _ = try await fixture.session.value(
                for: Request(url: fixture.server.url("/status/500")), serializer: DataResponseSerializer())
            Issue.record("a 500 passed DataResponseSerializer's validation")
        } catch {
            #expect(error.code == .unacceptableStatusCode)
        }
        try await fixture.tearDown()
    }

    @Test("upload(for:from:) sends the data and returns the server's response body")
    func uploadFromData() async throws {
        let fixture = try await SessionFixture.make()
        let payload = Data("async upload body".utf8)
        let (body, response) = try await fixture.session.upload(
            for: Request(url: fixture.server.url("/echo"), method: "POST"), from: payload)
        #expect(response.statusCode == 200)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: body)
        #expect(echoed.method == "POST")
        #expect(echoed.bodyLength == payload.count)
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(events.map(\.kind) == [.resume, .complete])
        #expect(fixture.session.uploadTasks.isEmpty)
        try await fixture.tearDown()
    }

    @Test("upload(for:fromFile:) streams the file and reports its upload progress")
    func uploadFromFile() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let count = 3 * 1024 * 1024
        let file = try PatternFile.make(count: count, in: scratch.url)
        let sent = Locked<Int64>(0)
        let (_, response) = try await fixture.session.upload(
            for: Request(url: fixture.server.url("/status/200"), method: "PUT"), fromFile: file
        ) { progress in sent.withLock { $0 = max($0, progress.completedUnitCount) } }
        #expect(response.statusCode == 200)
        #expect(fixture.server.requests(forPath: "/status/200").first?.bodyByteCount == count)
        #expect(sent.withLock { $0 } > 0)
        try await fixture.tearDown()
    }

    @Test("upload(for:fromFile:) with a missing file throws fileIO and creates no task")
    func uploadMissingFile() async throws {
        let fixture = try await SessionFixture.make()
        do {
            _ = try await fixture.session.upload(
                for: Request(url: fixture.server.url("/echo"), method: "PUT"),
                fromFile: URL(fileURLWithPath: "/nonexistent/herald-\(UUID().uuidString)"))
            Issue.record("a missing file was uploaded")
        } catch {
            #expect(error.code == .fileIO)
        }
        #expect(fixture.session.tasks.isEmpty)
        #expect(fixture.recorder.events.isEmpty)
        try await fixture.tearDown()
    }

    @Test("an upload from a path given as URL(string:) is refused with a message that says so, for both forms")
    func uploadFromNonFileURL() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("body.txt")
        try Data("hello".utf8).write(to: file)
        // A path given to URL(string:): the file is there, but the URL is no file URL.
        let notAFileURL = try #require(URL(string: file.path))
        let request = Request(url: fixture.server.url("/echo"), method: "PUT")
        let thrown = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.upload(for: request, fromFile: notAFileURL)
        }
        // Before, it said the file can't be read, with whatever errno the thread last had ("Success").
        #expect(thrown?.code == .fileIO)
        #expect(thrown?.message.contains("URL(fileURLWithPath:)") == true, "\(String(describing: thrown))")
        let fromTask = #expect(throws: HeraldError.self) {
            _ = try fixture.session.uploadTask(with: request, fromFile: notAFileURL)
        }
        #expect(fromTask?.message.contains("not a file URL") == true)
        try await fixture.tearDown()
    }

    @Test("download(for:to:) writes the whole body to the destination and returns its URL")
    func downloadToURL() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let count = 2 * 1024 * 1024
        let destination = scratch.url.appendingPathComponent("downloaded.bin")
        let (fileURL, response) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/bytes/\(count)")), to: destination)
        #expect(response.statusCode == 200)
        #expect(fileURL == destination)
        #expect(try PatternFile.matches(destination, count: count))
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(events.map(\.kind) == [.resume, .complete])
        #expect(fixture.recorder.completions.first?.assetPath == destination)
        try await fixture.tearDown()
    }

    @Test("download(for:to:) of a 404 returns the response and the error page, like URLSession")
    func download404() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("page.txt")
        let (fileURL, response) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/status/404")), to: destination)
        #expect(response.statusCode == 404)
        #expect(try String(contentsOf: fileURL, encoding: .utf8) == "404 Not Found\n")
        try await fixture.tearDown()
    }

    @Test("a transport error is thrown as a typed HeraldError")
    func transportErrorThrows() async throws {
        let fixture = try await SessionFixture.make()
        do {
            _ = try await fixture.session.data(
                for: Request(url: fixture.server.url("/fault/truncated?declared=1000&sent=10")))
            Issue.record("a truncated body was returned")
        } catch {
            #expect(error.code == .networkConnectionLost)
        }
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("after invalidation the async forms throw sessionInvalidated")
    func invalidatedSessionThrows() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.invalidate(cancelingTasks: false)
        do {
            _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
            Issue.record("an invalidated session started a task")
        } catch {
            #expect(error.code == .sessionInvalidated)
        }
        try await fixture.tearDown()
    }
}

/// A task executor that counts the jobs enqueued on it, and those enqueued from the thread `isLoopThread`
/// recognizes, then runs each job on a global queue.
private final class ThreadRecordingExecutor: TaskExecutor, @unchecked Sendable {
    // Safety: `counts` is locked; `isLoopThread` is immutable.
    private let counts = Locked((all: 0, onLoopThread: 0))
    private let isLoopThread: @Sendable () -> Bool

    init(isLoopThread: @escaping @Sendable () -> Bool) { self.isLoopThread = isLoopThread }

    var enqueued: Int { counts.withLock { $0.all } }
    var enqueuedOnLoopThread: Int { counts.withLock { $0.onLoopThread } }

    func enqueue(_ job: consuming ExecutorJob) {
        let onLoopThread = isLoopThread()
        counts.withLock { counts in
            counts.all += 1
            if onLoopThread { counts.onLoopThread += 1 }
        }
        let job = UnownedJob(job)
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A task executor that runs each job on a global queue: what a caller's own executor might be.
private final class GlobalQueueExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
