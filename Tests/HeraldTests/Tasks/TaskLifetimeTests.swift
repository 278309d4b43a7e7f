import Foundation
import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// A weak reference to a task, to see whether anything still holds it, and a signal when it goes: the
/// task's class (``ReleaseSignallingDataTask``) reports its `deinit`.
private final class WeakTask: @unchecked Sendable {
    // Safety: written once, in `init`; Swift's weak references are safe to read from any thread.
    weak var task: SessionTask?
    let released = OneShot<Void>()

    init(_ task: SessionTask) {
        self.task = task
        ReleaseSignallingDataTask.watch(task, signalling: released)
    }
}

/// A data task that says when it is released, so that a test awaits the release instead of looking again
/// and again.
private class ReleaseSignallingDataTask: DataTask, @unchecked Sendable {
    // Safety: adds no stored state; the watch list is a lock.
    private static let watched = Locked<[ObjectIdentifier: OneShot<Void>]>([:])

    static func watch(_ task: SessionTask, signalling released: OneShot<Void>) {
        watched.withLock { $0[ObjectIdentifier(task)] = released }
    }

    deinit {
        let identifier = ObjectIdentifier(self)
        Self.watched.withLock { $0.removeValue(forKey: identifier) }?.send(())
    }
}

/// What a test waited for did not happen in time.
private struct StillAlive: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the task was still alive after \(timeout)" }
}

/// Waits until nothing holds the task any more: told by the task's `deinit`, never by looking again.
private func waitUntilReleased(_ reference: WeakTask, timeout: Duration = .seconds(10)) async throws {
    do {
        try await reference.released.value(timeout: timeout)
    } catch {
        throw StillAlive(timeout: timeout)
    }
    #expect(reference.task == nil)
}

/// A data task whose initializer invalidates its session: the factory that makes it then refuses it.
private final class SelfRefusingDataTask: ReleaseSignallingDataTask, @unchecked Sendable {
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
        fixture.session.taskClasses = TaskClasses(dataTask: ReleaseSignallingDataTask.self)
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
        fixture.session.taskClasses = TaskClasses(dataTask: ReleaseSignallingDataTask.self)
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

    @Test("a task cancelled while it waits a minute to retry is released at once, not when the minute is up")
    func cancelledRetryIsReleased() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: ReleaseSignallingDataTask.self)
        // The default policy honours the server's Retry-After: the next attempt waits 60 s.
        fixture.session.interceptor = RetryPolicy.fast
        let reference = try {
            let task = try fixture.session.dataTask(
                with: Request(url: fixture.server.url("/flaky?key=lifetime&fail=1&retry-after=60")))
            task.resume()
            return WeakTask(task)
        }()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .retry } }
        reference.task?.cancel()
        try await fixture.recorder.waitForCompletions(1)
        try await waitUntilReleased(reference)
        try await fixture.tearDown()
    }

    @Test("a session let go without invalidating removes its empty temporary folder")
    func releasedSessionRemovesItsFolder() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        var configuration = SessionConfiguration()
        configuration.temporaryDirectory = scratch.url
        let destination = scratch.url.appendingPathComponent("downloaded.bin")
        weak var released: SessionManager?
        let (folder, queues, engine): (URL?, [DispatchQueue], Engine) = try await {
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            released = session
            _ = try await session.download(for: Request(url: server.url("/bytes/1024")), to: destination)
            return (
                session.downloadDirectory.madeURL, [session.completionQueue, session.eventPoster.eventQueue],
                session.engine
            )
        }()
        let made = try #require(folder)
        // The `async` call returns from inside the completion queue's block, which still holds the task (and the
        // task its session) until it ends, as the event queue's posting of its completion does, and the loop
        // thread may not yet have let go of the finished transfer (which holds its task): once the queues and
        // the loop thread have run what they had, nothing holds the session.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                for _ in 0..<2 {
                    let looped = DispatchSemaphore(value: 0)
                    engine.execute { looped.signal() }
                    looped.wait()
                    for queue in queues { queue.sync {} }
                }
                continuation.resume()
            }
        }
        #expect(released == nil)
        #expect(!FileManager.default.fileExists(atPath: made.path))
        #expect(FileManager.default.fileExists(atPath: destination.path))
        try await server.shutdown()
    }
}
