import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("A task's progress as an AsyncSequence")
struct ProgressUpdatesTests {
    @Test("download progress of a 4 MiB body increases and finishes at the total when the task completes")
    func downloadProgressIncreasesAndFinishes() async throws {
        let fixture = try await SessionFixture.make()
        let count = 4 * 1024 * 1024
        // The buffer keeps only the newest unread snapshot, and with the whole suite running the consumer
        // may not run for seconds. So the task suspends itself at its first bytes and resumes only once the
        // consumer has read a snapshot: at least one partial count, then the final one.
        let pause = ActionAtProgress<DownloadTask> { $0.suspend() }
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=524288&delayMs=200")),
            progress: pause.handler)
        pause.attach(task)
        let updates = task.downloadProgressUpdates
        let firstRead = OneShot<Void>()
        let resumed = OneShot<Void>()
        let collected = OneShot<[TransferProgress.Snapshot]>()
        Task {
            var all: [TransferProgress.Snapshot] = []
            var iterator = updates.makeAsyncIterator()
            if let first = await iterator.next() { all.append(first) }
            firstRead.send(())
            try? await resumed.value()
            while let next = await iterator.next() { all.append(next) }
            collected.send(all)
        }
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        try await firstRead.value()
        task.resume()
        resumed.send(())
        let snapshots = try await collected.value()
        #expect(snapshots.count >= 2)
        let completed = snapshots.map(\.completedUnitCount)
        #expect(zip(completed, completed.dropFirst()).allSatisfy { $0 < $1 }, "not increasing: \(snapshots)")
        #expect(
            snapshots.last == TransferProgress.Snapshot(completedUnitCount: Int64(count), totalUnitCount: Int64(count)))
        #expect(snapshots.last?.fractionCompleted == 1)
        // The sequence finishes when the completion handler runs, which is after the task completed.
        #expect(task.state == .completed)
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(events.map(\.kind) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("the progress sequence and the task's progress handler both receive updates")
    func sequenceAndHandlerCoexist() async throws {
        let fixture = try await SessionFixture.make()
        let count = 1024 * 1024
        let handled = Locked<Int64>(0)
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/\(count)?chunkSize=65536&delayMs=2")),
            downloadProgress: { progress in handled.withLock { $0 = max($0, progress.completedUnitCount) } })
        let updates = task.downloadProgressUpdates
        task.resume()
        let snapshots = try await collect(updates)
        #expect(snapshots.last?.completedUnitCount == Int64(count))
        #expect(handled.withLock { $0 } > 0)
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("upload progress ends at the body's size")
    func uploadProgressFinishes() async throws {
        let fixture = try await SessionFixture.make()
        let payload = Data(count: 2 * 1024 * 1024)
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/status/200"), method: "PUT"), from: payload)
        let updates = task.uploadProgressUpdates
        task.resume()
        let snapshots = try await collect(updates)
        #expect(
            snapshots.last
                == TransferProgress.Snapshot(
                    completedUnitCount: Int64(payload.count), totalUnitCount: Int64(payload.count)))
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("a sequence asked for after completion yields the final count and finishes at once")
    func askedAfterCompletion() async throws {
        let fixture = try await SessionFixture.make()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/1000")))
        task.resume()
        _ = try await fixture.recorder.waitForCompletions(1)
        let snapshots = try await collect(task.downloadProgressUpdates)
        #expect(snapshots == [TransferProgress.Snapshot(completedUnitCount: 1000, totalUnitCount: 1000)])
        try await fixture.tearDown()
    }

    @Test("a cancelled task's sequence finishes short of the total")
    func cancelledTaskFinishes() async throws {
        let fixture = try await SessionFixture.make()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/fault/stall")))
        let updates = task.downloadProgressUpdates
        task.resume()
        try await fixture.server.waitForRequests(count: 1)
        task.cancel()
        let snapshots = try await collect(updates)
        #expect(snapshots == [TransferProgress.Snapshot(completedUnitCount: 0, totalUnitCount: -1)])
        _ = try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }
}
