import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// Records every call of its `resume()` and `suspend()` overrides, with the state each call left, and
/// forwards to `super`.
final class ForwardingDataTask: DataTask, @unchecked Sendable {
    // Safety: adds one lock.
    let calls = Locked<[String]>([])

    override func resume() {
        super.resume()
        calls.withLock { $0.append("resume → \(state)") }
    }

    override func suspend() {
        super.suspend()
        calls.withLock { $0.append("suspend → \(state)") }
    }
}

/// Records every call of its `resume()` and `suspend()` overrides and never calls `super`.
final class VetoingDataTask: DataTask, @unchecked Sendable {
    // Safety: adds one lock.
    let calls = Locked<[String]>([])

    override func resume() { calls.withLock { $0.append("resume") } }

    override func suspend() { calls.withLock { $0.append("suspend") } }
}

/// Holds each `resume()` back until the test lets it through (`resumeNow()`): a class that resumes later, when it
/// sees fit. Only `asyncCallOfDeferringClass` uses it.
final class DeferringDataTask: DataTask, @unchecked Sendable {
    // Safety: adds no stored state; the stream is Sendable.
    private static let held = AsyncStream<DeferringDataTask>.makeStream()

    override func resume() { Self.held.continuation.yield(self) }

    func resumeNow() { super.resume() }

    /// The next task whose resume was held back.
    static func next() async -> DeferringDataTask? {
        var iterator = held.stream.makeAsyncIterator()
        return await iterator.next()
    }
}

/// Records, in one list for all its instances, each `resume()` call: the session, the task and the state
/// it left. Tests run in parallel: each reads only its own session's entries.
final class SessionResumedDataTask: DataTask, @unchecked Sendable {
    // Safety: adds no stored state; the list and the actions are locks.
    static let resumes = Locked<[(session: Int, task: Int, state: TaskState)]>([])
    /// Run after a resume is recorded, by session: lets a test hold the response until the state is read.
    static let afterResume = Locked<[Int: @Sendable () -> Void]>([:])

    override func resume() {
        super.resume()
        Self.resumes.withLock { $0.append((session.identifier, taskIdentifier, state)) }
        Self.afterResume.withLock { $0[session.identifier] }?()
    }
}

/// A download task with an initializer of its own, and a counter of its `resume()` calls.
final class LabelledDownloadTask: DownloadTask, @unchecked Sendable {
    // Safety: `label` is immutable; `resumes` is a lock.
    let label: String
    let resumes = Locked(0)

    required init(_ creation: TaskCreation) {
        label = "mine"
        super.init(creation)
    }

    override func resume() {
        resumes.withLock { $0 += 1 }
        super.resume()
    }
}

/// An upload task subclass, to name where a data task class is expected.
final class PlainUploadSubclass: UploadTask, @unchecked Sendable {}

@Suite("A session hands out the task subclasses it is given")
struct TaskSubclassTests {
    @Test(
        "an async call waits for a task class that resumes later, and one that never does ends with the caller's cancellation"
    )
    func asyncCallOfDeferringClass() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: DeferringDataTask.self)
        let session = fixture.session
        let url = fixture.server.url("/json")
        let call = Task { () async throws(HeraldError) -> Int in
            try await session.data(for: Request(url: url)).1.statusCode
        }
        // The class held the resume back: nothing was sent. It resumes now, and the call gets its answer.
        let held = try #require(await DeferringDataTask.next())
        #expect(fixture.server.requestCount == 0)
        held.resumeNow()
        #expect(try await call.value == 200)

        // Never resumed: the caller's cancellation ends the call, and the task.
        let abandoned = Task { () async throws(HeraldError) -> Int in
            try await session.data(for: Request(url: url)).1.statusCode
        }
        _ = try #require(await DeferringDataTask.next())
        abandoned.cancel()
        let error = await #expect(throws: HeraldError.self) { try await abandoned.value }
        #expect(error?.code == .cancelled)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("an async call made from an already-cancelled Swift task never calls the task class's resume()")
    func cancelledCallNeverResumes() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: CountingDataTask.self)
        let session = fixture.session
        let url = fixture.server.url("/json")
        let call = Task { () async -> HeraldError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(HeraldError) {
                _ = try await session.data(for: Request(url: url))
                return nil
            } catch {
                return error
            }
        }
        #expect(await call.value?.code == .cancelled)
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(HookCalls.calls(session: session.identifier).isEmpty)
        #expect(fixture.recorder.events.map(\.kind) == [.complete])
        try await fixture.tearDown()
    }

    @Test(
        "overrides that call super run for the caller's, the progress object's and the session's calls; notifications stay once"
    )
    func forwardingOverridesRunEverywhere() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: ForwardingDataTask.self)
        let task = try #require(
            try fixture.session.dataTask(with: Request(url: fixture.server.url("/fault/stall"))) as? ForwardingDataTask)
        task.resume()
        try await fixture.server.waitForRequests(count: 1)
        task.downloadProgress.pause()
        task.suspend()  // already suspended: the override runs, nothing changes
        task.uploadProgress.resume()
        task.resume()  // already running: the override runs, nothing changes
        task.cancel()
        try await fixture.recorder.waitForCompletions(1)
        #expect(
            task.calls.withLock { $0 } == [
                "resume → running", "suspend → suspended", "suspend → suspended", "resume → running",
                "resume → running",
            ])
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        #expect(task.error?.code == .cancelled)
        #expect(fixture.session.dataTasks.isEmpty)
        try await fixture.tearDown()
    }

    @Test("the session's own resume of a task it creates runs the override: responseObject(for:)")
    func sessionResumeRunsTheOverride() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: SessionResumedDataTask.self)
        // The response is held until the override has read the state: under load the transfer could
        // otherwise complete between `super.resume()` and that read.
        let server = fixture.server
        SessionResumedDataTask.afterResume.withLock { $0[fixture.session.identifier] = { server.openGate("resume") } }
        defer { SessionResumedDataTask.afterResume.withLock { $0[fixture.session.identifier] = nil } }
        _ = try await fixture.session.responseObject(for: Request(url: fixture.server.url("/json?gate=resume")))
        let events = try await fixture.recorder.waitForCompletions(1)
        let taskIdentifier = try #require(events.first?.taskIdentifier)
        #expect(fixture.recorder.timeline(ofTask: taskIdentifier) == [.resume, .complete])
        let resumes = SessionResumedDataTask.resumes.withLock { $0 }.filter {
            $0.session == fixture.session.identifier
        }
        #expect(resumes.map(\.task) == [taskIdentifier])
        #expect(resumes.map(\.state) == [.running])
        try await fixture.tearDown()
    }

    @Test("overrides that don't call super leave the task suspended and post nothing")
    func vetoingOverridesChangeNothing() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: VetoingDataTask.self)
        let task = try #require(
            try fixture.session.dataTask(with: Request(url: fixture.server.url("/json"))) as? VetoingDataTask)
        task.resume()
        task.downloadProgress.resume()
        task.uploadProgress.pause()
        #expect(task.state == .suspended)
        // The only way forward is cancel(), which the subclass left alone: one taskDidComplete, no resume.
        task.cancel()
        try await fixture.recorder.waitForCompletions(1)
        #expect(task.calls.withLock { $0 } == ["resume", "resume", "suspend"])
        #expect(fixture.recorder.timeline == ["complete#\(task.taskIdentifier)"])
        #expect(task.error?.code == .cancelled)
        #expect(fixture.server.requestCount == 0)
        try await fixture.tearDown()
    }

    @Test("download tasks, and the download a data task becomes, are made from the registered class")
    func downloadSubclasses() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(downloadTask: LabelledDownloadTask.self)
        let made = try fixture.session.downloadTask(with: Request(url: fixture.server.url("/bytes/1024")))
        let download = try #require(made as? LabelledDownloadTask)
        #expect(download.label == "mine")
        download.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(download.resumes.withLock { $0 } == 1)
        #expect(fixture.recorder.timeline(ofTask: download.taskIdentifier) == [.resume, .complete])

        let became = Locked<[DownloadTask]>([])
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        fixture.session.dataTaskDidBecomeDownloadTask = { _, download in became.withLock { $0.append(download) } }
        let dataTask = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/2048")))
        dataTask.resume()
        try await fixture.recorder.waitForCompletions(2)
        let face = try #require(became.withLock { $0 }.first as? LabelledDownloadTask)
        #expect(face.taskIdentifier == dataTask.taskIdentifier)
        #expect(fixture.recorder.timeline(ofTask: dataTask.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("an upload task class named as the data task class is refused with invalidRequest")
    func uploadClassAsDataClassIsRefused() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: PlainUploadSubclass.self)
        let error = #expect(throws: HeraldError.self) {
            _ = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        }
        #expect(error?.code == .invalidRequest)
        #expect(fixture.session.tasks.isEmpty)
        // Upload factories take it.
        fixture.session.taskClasses = TaskClasses(uploadTask: PlainUploadSubclass.self)
        let upload = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/echo")), from: Data("x".utf8))
        #expect(upload is PlainUploadSubclass)
        upload.cancel()
        try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }
}
