import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Data task becoming a download")
struct BecomeDownloadTests {
    @Test(".becomeDownload: body to a file, the original handler gets its URL once, one resume, one complete")
    func becomeDownload() async throws {
        let fixture = try await SessionFixture.make()
        let count = 500_000
        let became = Collected<
            (dataTask: DataTask, downloadTask: DownloadTask, listedDownloads: [Int], listedData: [Int])
        >()
        let writes = Collected<(task: Int, total: Int64)>()
        let session = fixture.session
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        session.dataTaskDidBecomeDownloadTask = { dataTask, downloadTask in
            became.append(
                (
                    dataTask, downloadTask, session.downloadTasks.map(\.taskIdentifier),
                    session.dataTasks.map(\.taskIdentifier)
                ))
        }
        session.downloadTaskDidWriteData = { task, _, total, _ in writes.append((task.taskIdentifier, total)) }
        let objectCompletions = Collected<TaskCompletion>()
        let log = CompletionLog()
        let task = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=16384")), completionHandler: log.handler)
        let token = fixture.center.addObserver(for: .taskDidComplete, object: task) { note in
            objectCompletions.append(note.userInfo)
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // The recorder may hear of the completion while the same post still delivers to the observer above.
        await fixture.center.drain()

        let change = try #require(became.all.first)
        #expect(became.all.count == 1)
        #expect(change.dataTask === task)
        #expect(change.downloadTask.taskIdentifier == task.taskIdentifier)
        #expect(change.listedDownloads == [task.taskIdentifier])
        #expect(change.listedData.isEmpty)
        #expect(change.downloadTask.downloadProgress === task.downloadProgress)

        #expect(log.all.count == 1)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        let fileURL = try #require(call.object as? URL)
        #expect(fileURL == change.downloadTask.temporaryURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        #expect(try PatternFile.matches(fileURL, count: count))
        #expect(writes.all.last?.total == Int64(count))
        #expect(Set(writes.all.map(\.task)) == [task.taskIdentifier])
        #expect(task.downloadProgress.completedUnitCount == Int64(count))

        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(objectCompletions.all.count == 1)
        let completion = try #require(fixture.recorder.completions.first)
        #expect(completion.assetPath == fileURL)
        #expect(completion.responseData == nil)
        #expect(completion.error == nil)
        #expect(task.state == .completed && change.downloadTask.state == .completed)
        #expect(session.tasks.isEmpty)
        token.cancel()
        session.invalidate(cancelingTasks: false)
        try await fixture.recorder.waitForInvalidation()
        #expect(
            fixture.recorder.timeline == [
                "resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)", "invalidate",
            ])
        try await fixture.server.shutdown()
    }

    @Test(
        "downloadTaskDidFinishDownloading moves a became-download file; cancelling the download task cancels the transfer"
    )
    func destinationAndCancel() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let session = fixture.session
        let target = scratch.url.appendingPathComponent("moved.bin")
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        session.downloadTaskDidFinishDownloading = { _, _, _ in target }
        let log = CompletionLog()
        let first = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/20000")), completionHandler: log.handler)
        first.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.object as? URL == target)
        #expect(try PatternFile.matches(target, count: 20000))

        // The second one is cancelled through the download task it became, mid-body.
        session.dataTaskDidBecomeDownloadTask = { _, download in download.cancel() }
        let second = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/10000000?chunkSize=16384&delayMs=50")),
            completionHandler: log.handler)
        second.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(log.all.count == 2)
        #expect(log.all.last?.error?.code == .cancelled)
        #expect(fixture.recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .complete])
        #expect(session.tasks.isEmpty)
        try await fixture.tearDown()
    }

    @Test("a decoded body cut short makes no resume data: its byte count is no offset into the encoded representation")
    func decodedBodyIsNotResumable() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        let became = Locked<DownloadTask?>(nil)
        session.dataTaskDidBecomeDownloadTask = { _, download in became.withLock { $0 = download } }
        // A `GET` with an `ETag`, 150,000 bytes of a 200,038-byte gzip encoding sent, then the connection closed:
        // libcurl has decoded 149,975 bytes into the file when it fails.
        let path = "/fault/truncated?declared=200000&sent=150000&gzip=1"
        let log = CompletionLog()
        let task = try session.dataTask(with: Request(url: fixture.server.url(path)), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)

        let download = try #require(became.withLock { $0 })
        #expect(log.all.first?.error?.code == .networkConnectionLost)
        #expect(download.resumeDataAfterFailure == nil)
        #expect(log.all.first?.error?.resumeData == nil)
        #expect(!FileManager.default.fileExists(atPath: download.temporaryURL.path))
        #expect(fixture.server.requests(forPath: "/fault/truncated").first?.headerValue("Accept-Encoding") != nil)
        try await fixture.tearDown()
    }

    @Test("suspending the download task and resuming the data task control one transfer, announced for the data task")
    func suspendThroughEitherFace() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        // Suspended before the first body byte is written: the answer must not undo it.
        session.dataTaskDidBecomeDownloadTask = { _, download in download.suspend() }
        let count = 400_000
        let log = CompletionLog()
        let task = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=16384")), completionHandler: log.handler)
        let suspensions = Collected<Int>()
        let token = fixture.center.addObserver(for: .taskDidSuspend, object: task) { note in
            suspensions.append(note.userInfo.taskIdentifier)
        }
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        await session.completionQueueBarrier()
        await session.engineBarrier()
        #expect(task.state == .suspended)
        #expect(task.downloadProgress.completedUnitCount == 0)
        #expect(log.all.isEmpty)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        #expect(suspensions.all == [task.taskIdentifier])
        let fileURL = try #require(log.all.first?.object as? URL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        #expect(try PatternFile.matches(fileURL, count: count))
        token.cancel()
        try await fixture.tearDown()
    }

    @Test(
        "a download whose file can't be opened is retried as the download: the next attempt writes the file",
        arguments: [false, true])
    func becomeDownloadRetriedAfterFileFailure(answerAllowOnRetry: Bool) async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let count = 100_000
        let dispositions = Locked(0)
        session.dataTaskDidReceiveResponse = { _, _ in
            // Asked again only if the retry ran as the data task it was, not as the download.
            let asked = dispositions.withLock { count -> Int in
                count += 1
                return count
            }
            return asked == 1 || !answerAllowOnRetry ? .becomeDownload : .allow
        }
        let removedDirectory = Locked<URL?>(nil)
        session.dataTaskDidBecomeDownloadTask = { _, download in
            // The engine makes the file when it carries out the answer, after this hook: with its folder gone
            // it can't, and the transfer fails with `fileIO`.
            let directory = download.temporaryURL.deletingLastPathComponent()
            if removedDirectory.withLock({ $0 }) == nil, rmdir(directory.path) == 0 {
                removedDirectory.withLock { $0 = directory }
            }
        }
        let retried = Collected<HeraldError.Code>()
        session.interceptor = Interceptor { context in
            retried.append(context.error.code)
            guard context.attempt == 1, let directory = removedDirectory.withLock({ $0 }) else { return .doNotRetry }
            // The folder back, so the download's next attempt can write its file.
            mkdir(directory.path, 0o700)
            return .retry
        }
        let log = CompletionLog()
        let task = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)

        #expect(removedDirectory.withLock { $0 } != nil)
        #expect(retried.all == [.fileIO])
        // The download's next attempt goes straight to its file: the data-task hook is not asked again.
        #expect(dispositions.withLock { $0 } == 1)
        let call = try #require(log.all.first)
        #expect(log.all.count == 1)
        #expect(call.error == nil)
        let fileURL = try #require(call.object as? URL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        #expect(try PatternFile.matches(fileURL, count: count))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        try await fixture.tearDown()
    }
}

extension BecomeDownloadTests {
    @Test(
        "an upload that became a download sends its body again when the download is retried",
        arguments: ["data", "file", "stream"])
    func becameDownloadRetrySendsUploadBody(source: String) async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let body = Data(TestServer.expectedBytes(in: 0..<10_000))
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        // A stream can't be read twice: the retry asks for a new one.
        session.taskNeedNewBodyStream = { _ in BodyStream(data: body) }
        session.interceptor = Interceptor { context in context.attempt == 1 ? .retry : .doNotRetry }
        let count = 200_000
        // The first answer stops short of its length (a dropped connection); the second is whole.
        var request = Request(url: fixture.server.url("/bytes/\(count)?key=upload-became&dropAfter=50000"))
        request.method = "PUT"
        let log = CompletionLog()
        let task: UploadTask
        switch source {
        case "data":
            task = try session.uploadTask(with: request, from: body, completionHandler: log.handler)
        case "file":
            let url = scratch.url.appendingPathComponent("body.bin")
            try body.write(to: url)
            task = try session.uploadTask(with: request, fromFile: url, completionHandler: log.handler)
        default:
            task = try session.uploadTask(
                withStreamedRequest: request, bodyProvider: BodyStream(data: body), completionHandler: log.handler)
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let call = try #require(log.all.first)
        #expect(call.error == nil, "\(String(describing: call.error))")
        let fileURL = try #require(call.object as? URL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        #expect(try PatternFile.matches(fileURL, count: count))
        // Both attempts carried the whole body: the retry sent nothing before.
        let bodies = fixture.server.requests(forPath: "/bytes/\(count)").map(\.bodyByteCount)
        #expect(bodies == [body.count, body.count])
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        try await fixture.tearDown()
    }
}
