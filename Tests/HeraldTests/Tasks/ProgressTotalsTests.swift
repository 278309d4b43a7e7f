import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// What a task's download progress counts: the task's own body, against a total that is that body's.
@Suite("Download progress totals")
struct ProgressTotalsTests {
    @Test("a body libcurl decodes is counted decoded, against an unknown total: never past its total")
    func decodedBodyHasNoTotal() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let seen = Locked<[(completed: Int64, total: Int64)]>([])
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/gzip")),
            downloadProgress: { progress in
                seen.withLock { $0.append((progress.completedUnitCount, progress.totalUnitCount)) }
            },
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let decoded = Int64(TestServer.gzipDecodedText.utf8.count)
        #expect(log.all.first?.object as? Data == Data(TestServer.gzipDecodedText.utf8))
        // The `Content-Length` (the encoded size, smaller than the text) is no total for the decoded count.
        #expect(task.downloadProgress.completedUnitCount == decoded)
        #expect(task.downloadProgress.totalUnitCount == -1)
        #expect(seen.withLock { $0 }.allSatisfy { $0.total == -1 || $0.completed <= $0.total })
        try await fixture.tearDown()
    }

    @Test("a HEAD's answer has no body to count, whatever its Content-Length: its progress ends complete, at zero")
    func headHasNoBodyToCount() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/1048576"), method: "HEAD"))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(task.error == nil)
        #expect(task.response?.expectedContentLength == 1_048_576)
        // Before, it finished at 0 of 1048576: a transfer that never completed, by its progress.
        #expect(task.downloadProgress.completedUnitCount == 0)
        #expect(task.downloadProgress.totalUnitCount == 0)
        try await fixture.tearDown()
    }

    @Test("a redirect's body is no part of the progress, and its length is no total for the body that follows")
    func redirectBodyIsNotProgress() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let seen = Locked<[(completed: Int64, total: Int64)]>([])
        let count = 100_000
        var components = URLComponents(url: fixture.server.url("/redirect-to"), resolvingAgainstBaseURL: false)
        components?.queryItems = [
            URLQueryItem(name: "url", value: "/bytes/\(count)?chunked=1&chunkSize=10000"),
            URLQueryItem(name: "status", value: "302"),
        ]
        let url = try #require(components?.url)
        let task = try fixture.session.dataTask(
            with: Request(url: url),
            downloadProgress: { progress in
                seen.withLock { $0.append((progress.completedUnitCount, progress.totalUnitCount)) }
            })
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(task.error == nil)
        // The 302's own body ("302 Found\n", with its Content-Length) was neither counted nor taken as the total.
        #expect(task.downloadProgress.completedUnitCount == Int64(count))
        #expect(task.downloadProgress.totalUnitCount == -1)
        #expect(seen.withLock { $0 }.allSatisfy { $0.total == -1 })
        try await fixture.tearDown()
    }

    @Test("a resumed download whose file was already whole (a 416 naming its length) ends at the file's length")
    func alreadyWholeFileProgress() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let size = 100_000
        let path = "/bytes/\(size)"
        // Every byte reaches the partial file; the chunked body's end never comes.
        let first = try session.downloadTask(
            with: Request(url: server.url("\(path)?chunked=1&dropAfter=\(size)&key=whole")))
        first.resume()
        try await recorder.waitForCompletions(1)
        let data = try #require(first.resumeDataAfterFailure)
        let written = Locked<Int64>(0)
        session.downloadTaskDidWriteData = { _, bytes, _, _ in written.withLock { $0 += bytes } }
        let resumed = try session.downloadTask(withResumeData: data)
        resumed.resume()
        try await recorder.waitForCompletions(2)
        #expect(resumed.response?.statusCode == 416)
        #expect(resumed.error == nil)
        #expect(resumed.downloadProgress.completedUnitCount == Int64(size))
        // Nothing was written: the answer's body (if any) went nowhere.
        #expect(written.withLock { $0 } == 0)
        if let file = recorder.completions.last?.assetPath { try? FileManager.default.removeItem(at: file) }
        session.invalidate(cancelingTasks: true)
        scratch.remove()
        try await server.shutdown()
    }
}

/// Progress handlers on a completion queue of the caller's that is concurrent.
@Suite("Progress handlers on a concurrent completion queue")
struct ConcurrentQueueProgressTests {
    @Test("handler calls never overlap, never go backwards, and none runs once the completion handler started")
    func handlersStayInOrder() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(
            configuration: SessionConfiguration(), notificationCenter: NotificationHub(),
            completionQueue: DispatchQueue.global())
        session.responseSerializer = DataResponseSerializer()
        let recorder = RecordingObserver(center: session.notificationCenter)
        struct Seen {
            var running = 0
            var overlapped = false
            var counts: [Int64] = []
            var afterCompletion = false
            var completed = false
        }
        let seen = Locked(Seen())
        let count = 2_000_000
        let task = try session.dataTask(
            with: Request(url: server.url("/bytes/\(count)?chunkSize=65536&delayMs=2")),
            downloadProgress: { progress in
                seen.withLock { seen in
                    seen.running += 1
                    if seen.running > 1 { seen.overlapped = true }
                    if seen.completed { seen.afterCompletion = true }
                    seen.counts.append(progress.completedUnitCount)
                }
                usleep(45_000)  // Simulated slow work in the handler, not a wait for anything.
                seen.withLock { $0.running -= 1 }
            },
            completionHandler: { _, _, _ in seen.withLock { $0.completed = true } })
        task.resume()
        try await recorder.waitForCompletions(1, timeout: .seconds(60))
        let result = seen.withLock { $0 }
        #expect(task.error == nil)
        #expect(!result.overlapped)
        #expect(!result.afterCompletion)
        #expect(result.counts == result.counts.sorted())
        #expect(result.counts.last == Int64(count))
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
