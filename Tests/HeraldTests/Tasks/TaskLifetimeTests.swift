import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// A weak reference to a task, to see whether anything still holds it.
private final class WeakTask: @unchecked Sendable {
    // Safety: written once, in `init`; Swift's weak references are safe to read from any thread.
    weak var task: SessionTask?

    init(_ task: SessionTask) { self.task = task }
}

/// What a test waited for did not happen in time.
private struct StillAlive: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the task was still alive after \(timeout)" }
}

/// Waits, yielding between looks, until nothing holds the task any more.
private func waitUntilReleased(_ reference: WeakTask, timeout: Duration = .seconds(10)) async throws {
    let deadline = ContinuousClock.now + timeout
    while reference.task != nil {
        guard ContinuousClock.now < deadline else { throw StillAlive(timeout: timeout) }
        await Task.yield()
    }
}

/// A data task whose initializer invalidates its session: the factory that makes it then refuses it.
private final class SelfRefusingDataTask: DataTask, @unchecked Sendable {
    // Safety: adds one lock.
    static let made = Locked<[WeakTask]>([])

    required init(_ creation: TaskCreation) {
        super.init(creation)
        Self.made.withLock { $0.append(WeakTask(self)) }
        session.invalidate(cancelingTasks: false)
    }
}

@Suite("A task lives until it completes and its caller lets it go")
struct TaskLifetimeTests {
    @Test("a completed task is released even while the caller keeps its progress objects")
    func completedTaskIsReleased() async throws {
        let fixture = try await SessionFixture.make()
        let (reference, upload, download) = try {
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/4096")))
            task.resume()
            return (WeakTask(task), task.uploadProgress, task.downloadProgress)
        }()
        try await fixture.recorder.waitForCompletions(1)
        try await waitUntilReleased(reference)
        #expect(download.isFinished)
        #expect(download.completedUnitCount == 4096)
        // The task is gone: its progress objects control nothing, and say so by doing nothing.
        download.cancel()
        upload.resume()
        #expect(fixture.recorder.events.filter { $0.kind == .resume }.count == 1)
        try await fixture.tearDown()
    }

    @Test("a task cancelled before it ever resumed is released")
    func cancelledUnresumedTaskIsReleased() async throws {
        let fixture = try await SessionFixture.make()
        let (reference, download) = try {
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/16")))
            task.downloadProgress.cancel()
            return (WeakTask(task), task.downloadProgress)
        }()
        try await fixture.recorder.waitForCompletions(1)
        try await waitUntilReleased(reference)
        #expect(download.isFinished)
        try await fixture.tearDown()
    }

    @Test("a task its factory refuses, because the session was invalidated meanwhile, is released")
    func refusedTaskIsReleased() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: SelfRefusingDataTask.self)
        let before = SelfRefusingDataTask.made.withLock { $0.count }
        #expect(throws: HeraldError.self) {
            try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/16")))
        }
        let reference = try #require(SelfRefusingDataTask.made.withLock { $0.count > before ? $0[before] : nil })
        try await waitUntilReleased(reference)
        try await fixture.tearDown()
    }
}
