import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

@Suite("Progress objects are made on first use")
struct ProgressObjectTests {
    @Test("a task nobody asks for progress makes none; asked for afterwards, it has the final counts")
    func madeOnlyWhenAskedFor() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/3000")))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let made = task.core.withLock { ($0.progress.upload != nil, $0.progress.download != nil) }
        #expect(made == (false, false))

        let download = task.downloadProgress
        #expect(download === task.downloadProgress)
        #expect(download.isFinished)
        #expect(download.completedUnitCount == 3000)
        #expect(download.totalUnitCount == 3000)
        #expect(task.uploadProgress.completedUnitCount == 0)
        // Born finished: it controls nothing, and the completed task stays as it is.
        download.resume()
        download.cancel()
        #expect(task.state == .completed)
        #expect(task.error == nil)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a progress handler gets its final call although nothing asked for the object")
    func handlerGetsItsFinalCall() async throws {
        let fixture = try await SessionFixture.make()
        let seen = Locked<[Int64]>([])
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/5000")), uploadProgress: nil,
            downloadProgress: { progress in seen.withLock { $0.append(progress.completedUnitCount) } },
            completionHandler: nil)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(seen.withLock { $0.last } == 5000)
        #expect(task.downloadProgress.completedUnitCount == 5000)
        try await fixture.tearDown()
    }

    @Test("a progress object first asked for after a data task became a download controls the task it continues")
    func madeAfterBecomingDownload() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        // Asked for through the data task's face, after the switch: it must act on the download task.
        session.dataTaskDidBecomeDownloadTask = { data, _ in data.downloadProgress.pause() }
        let count = 300_000
        let log = CompletionLog()
        let task = try session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=16384")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        #expect(task.state == .suspended)
        task.downloadProgress.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        let fileURL = try #require(log.all.first?.object as? URL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        #expect(try PatternFile.matches(fileURL, count: count))
        #expect(task.downloadProgress.completedUnitCount == Int64(count))
        try await fixture.tearDown()
    }
}
