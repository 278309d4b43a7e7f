import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Download tasks: files, moves, nothing lost")
struct DownloadTaskTests {
    @Test("a download is written to a temporary file, then moved to the destination")
    func downloadToDestination() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 1_000_003
        let destination = scratch.url.appendingPathComponent("out.bin")
        let temporary = Locked<URL?>(nil)
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(size)")),
            destination: { temporaryURL, response in
                temporary.withLock { $0 = temporaryURL }
                #expect(response.statusCode == 200)
                return destination
            },
            completionHandler: log.handler)
        #expect(fixture.session.downloadTasks.map(\.taskIdentifier) == [task.taskIdentifier])
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let call = try #require(log.all.first)
        #expect(log.all.count == 1)
        #expect(call.error == nil)
        #expect(call.fileURL == destination)
        #expect(call.response?.statusCode == 200)
        #expect(try PatternFile.matches(destination, count: size))
        let temporaryURL = try #require(temporary.withLock { $0 })
        #expect(temporaryURL == task.temporaryURL)
        #expect(!FileManager.default.fileExists(atPath: temporaryURL.path))
        #expect(fixture.recorder.completions.first?.assetPath == destination)
        #expect(fixture.recorder.completions.first?.responseData == nil)
        #expect(task.downloadProgress.completedUnitCount == Int64(size))
        #expect(task.downloadProgress.totalUnitCount == Int64(size))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("a failed move posts downloadDidFailToMoveFile, keeps the temporary file and reports where it is")
    func moveFailureKeepsTheFile() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 200_000
        let destination = scratch.url.appendingPathComponent("missing/dir/out.bin")
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(size)")), destination: { _, _ in destination },
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let id = task.taskIdentifier
        #expect(fixture.recorder.timeline == ["resume#\(id)", "moveFailed#\(id)", "complete#\(id)"])
        let failure = try #require(fixture.recorder.events.first { $0.kind == .moveFailed }?.moveFailure)
        #expect(failure.error.code == .downloadMoveFailed)
        #expect(failure.error.underlying != nil)
        #expect(failure.sourceURL == task.temporaryURL)
        #expect(failure.destinationURL == destination)
        #expect(failure.error.keptFileURL == task.temporaryURL)
        // The response goes with the error: the kept file may be the body asked for or an error page.
        #expect(failure.error.response?.statusCode == 200)
        #expect(failure.request.method == "GET")
        #expect(failure.request.url == fixture.server.url("/bytes/\(size)"))
        #expect(failure.sessionIdentifier == fixture.session.identifier)
        #expect(try PatternFile.matches(failure.sourceURL, count: size))
        let call = try #require(log.all.first)
        #expect(call.error?.code == .downloadMoveFailed)
        #expect(call.error?.keptFileURL == task.temporaryURL)
        #expect(call.error?.statusCode == 200)
        #expect(call.fileURL == task.temporaryURL)
        #expect(fixture.recorder.completions.first?.assetPath == task.temporaryURL)
        #expect(fixture.recorder.completions.first?.error?.code == .downloadMoveFailed)
        #expect(fixture.recorder.completions.first?.error?.keptFileURL == task.temporaryURL)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        try? FileManager.default.removeItem(at: task.temporaryURL)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("createIntermediateDirectories makes the destination's missing directories")
    func createsIntermediateDirectories() async throws {
        var configuration = SessionConfiguration()
        configuration.downloadMoveOptions = [.createIntermediateDirectories]
        let fixture = try await SessionFixture.make(configuration: configuration)
        let scratch = try ScratchDirectory()
        let destination = scratch.url.appendingPathComponent("a/b/c/out.bin")
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/5000")), destination: { _, _ in destination },
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.fileURL == destination)
        #expect(try PatternFile.matches(destination, count: 5000))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("an existing destination fails the move by default and is replaced with replaceExistingFile")
    func replacesExistingDestination() async throws {
        let scratch = try ScratchDirectory()
        let destination = scratch.url.appendingPathComponent("out.bin")
        try Data("stale".utf8).write(to: destination)

        let plain = try await SessionFixture.make()
        let failing = DownloadLog()
        let first = try plain.session.downloadTask(
            with: Request(url: plain.server.url("/bytes/4000")), destination: { _, _ in destination },
            completionHandler: failing.handler)
        first.resume()
        try await plain.recorder.waitForCompletions(1)
        #expect(plain.recorder.timeline(ofTask: first.taskIdentifier) == [.resume, .moveFailed, .complete])
        #expect(failing.all.first?.error?.code == .downloadMoveFailed)
        #expect(try Data(contentsOf: destination) == Data("stale".utf8))
        #expect(try PatternFile.matches(first.temporaryURL, count: 4000))
        try? FileManager.default.removeItem(at: first.temporaryURL)
        try await plain.tearDown()

        var configuration = SessionConfiguration()
        configuration.downloadMoveOptions = [.replaceExistingFile]
        let replacing = try await SessionFixture.make(configuration: configuration)
        let log = DownloadLog()
        let second = try replacing.session.downloadTask(
            with: Request(url: replacing.server.url("/bytes/4000")), destination: { _, _ in destination },
            completionHandler: log.handler)
        second.resume()
        try await replacing.recorder.waitForCompletions(1)
        #expect(replacing.recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .complete])
        #expect(log.all.first?.error == nil)
        #expect(try PatternFile.matches(destination, count: 4000))
        #expect(!FileManager.default.fileExists(atPath: second.temporaryURL.path))
        scratch.remove()
        try await replacing.tearDown()
    }

    @Test("without a destination closure the session's downloadTaskDidFinishDownloading chooses it")
    func sessionHookChoosesDestination() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let destination = scratch.url.appendingPathComponent("hooked.bin")
        fixture.session.downloadTaskDidFinishDownloading = { _, _, response in
            response.statusCode == 200 ? destination : nil
        }
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/2000")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.fileURL == destination)
        #expect(try PatternFile.matches(destination, count: 2000))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("without a destination the file stays at its temporary location and is reported")
    func noDestinationKeepsTemporaryFile() async throws {
        let fixture = try await SessionFixture.make()
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/3000")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.fileURL == task.temporaryURL)
        #expect(try PatternFile.matches(task.temporaryURL, count: 3000))
        try? FileManager.default.removeItem(at: task.temporaryURL)
        try await fixture.tearDown()
    }

    @Test("a download that fails mid-body deletes its temporary file and reports the error")
    func failureDeletesTemporaryFile() async throws {
        let fixture = try await SessionFixture.make()
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/fault/truncated?declared=100000&sent=5000")),
            destination: { _, _ in URL(fileURLWithPath: "/nonexistent") }, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.first?.error != nil)
        #expect(log.all.first?.fileURL == nil)
        #expect(!FileManager.default.fileExists(atPath: task.temporaryURL.path))
        try await fixture.tearDown()
    }

    @Test("a resumable download that times out part-way keeps its bytes and offers resume data that completes it")
    func failureKeepsResumableBytes() async throws {
        let fixture = try await SessionFixture.make()
        let size = 60_000
        let log = DownloadLog()
        // The first 40,000 bytes arrive at once, then the server pauses far longer than the idle timeout;
        // the resumed request's remaining 20,000 bytes are a single chunk, sent at once. The timeout is
        // generous (8 s; 3 s failed once on a loaded machine) so that connecting and the first chunk
        // always beat it, and the pause (60 s) is far longer still.
        let task = try fixture.session.downloadTask(
            with: Request(
                url: fixture.server.url("/bytes/\(size)?chunkSize=40000&delayMs=60000"), timeoutInterval: 8),
            completionHandler: log.handler)
        task.resume()
        // Waited for well past the 8 s timeout: on a loaded machine it fires late.
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error?.code == .timedOut)
        let resumeData = try #require(task.resumeDataAfterFailure)
        #expect(FileManager.default.fileExists(atPath: task.temporaryURL.path))

        let resumedLog = DownloadLog()
        let resumed = try fixture.session.downloadTask(
            withResumeData: resumeData, completionHandler: resumedLog.handler)
        resumed.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(resumedLog.all.first?.error == nil)
        let file = try #require(resumedLog.all.first?.fileURL)
        #expect(try PatternFile.matches(file, count: size))
        let ranges = fixture.server.requests.compactMap { $0.headerValue("Range") }
        #expect(ranges.count == 1)
        try? FileManager.default.removeItem(at: file)
        try await fixture.tearDown()
    }

    @Test("suspending and resuming a download posts each once and writes every byte once")
    func suspendResumeDownload() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let log = DownloadLog()
        let suspend = ActionAtProgress<DownloadTask> { $0.suspend() }
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(size)?\(stoppedBodyQuery(key: "body"))")),
            progress: suspend.handler, completionHandler: log.handler)
        suspend.attach(task)
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        #expect(task.downloadProgress.completedUnitCount < Int64(size))
        fixture.server.openGate("body")
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        let fileURL = try #require(log.all.first?.fileURL)
        #expect(try PatternFile.matches(fileURL, count: size))
        #expect(fixture.server.requestCount == 1)
        try? FileManager.default.removeItem(at: fileURL)
        try await fixture.tearDown()
    }
}
