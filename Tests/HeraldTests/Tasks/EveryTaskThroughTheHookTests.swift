import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// One log of `resume()` and `suspend()` calls for the three counting classes, keyed by session, so that
/// tests running in parallel read only their own session's calls.
enum HookCalls {
    struct Call: Sendable, Equatable {
        let session: Int
        let task: Int
        let method: String
        /// The class whose override ran.
        let className: String
    }

    static let log = Locked<[Call]>([])

    static func record(_ task: SessionTask, _ method: String) {
        log.withLock {
            $0.append(
                Call(
                    session: task.session.identifier, task: task.taskIdentifier, method: method,
                    className: "\(type(of: task))"))
        }
    }

    static func calls(session: Int) -> [Call] { log.withLock { $0 }.filter { $0.session == session } }
}

final class CountingDataTask: DataTask, @unchecked Sendable {
    // Safety: adds no stored state; the log is a lock.
    override func resume() { HookCalls.record(self, "resume"); super.resume() }
    override func suspend() { HookCalls.record(self, "suspend"); super.suspend() }
}

final class CountingUploadTask: UploadTask, @unchecked Sendable {
    // Safety: adds no stored state; the log is a lock.
    override func resume() { HookCalls.record(self, "resume"); super.resume() }
    override func suspend() { HookCalls.record(self, "suspend"); super.suspend() }
}

final class CountingDownloadTask: DownloadTask, @unchecked Sendable {
    // Safety: adds no stored state; the log is a lock.
    override func resume() { HookCalls.record(self, "resume"); super.resume() }
    override func suspend() { HookCalls.record(self, "suspend"); super.suspend() }
}

/// Every `taskDidResume` and `taskDidSuspend` a session posts, with the class of the task it names.
final class AnnouncedTasks: Sendable {
    struct Announcement: Sendable {
        let name: String
        let task: Int
        let className: String
        let isCountingClass: Bool
    }

    private let seen = Locked<[Announcement]>([])
    private let tokens: [ObservationToken]

    init(center: NotificationHub) {
        let seen = seen
        @Sendable func record(_ name: String, _ object: (any AnyObject & Sendable)?) {
            guard let task = object as? SessionTask else { return }
            let isCounting = task is CountingDataTask || task is CountingUploadTask || task is CountingDownloadTask
            seen.withLock {
                $0.append(
                    Announcement(
                        name: name, task: task.taskIdentifier, className: "\(type(of: task))",
                        isCountingClass: isCounting))
            }
        }
        tokens = [
            center.addObserver(for: .taskDidResume) { note in record("resume", note.object) },
            center.addObserver(for: .taskDidSuspend) { note in record("suspend", note.object) },
        ]
    }

    var all: [Announcement] { seen.withLock { $0 } }
}

@Suite("Every task a session makes goes through the task-class hook")
struct EveryTaskThroughTheHookTests {
    /// One factory: what it does with a fixture whose session hands out the counting classes, and which
    /// counting class its tasks must be.
    struct Factory: Sendable, CustomTestStringConvertible {
        let name: String
        let expectedClass: String
        let run: @Sendable (SessionFixture) async throws -> Void
        var testDescription: String { name }
    }

    static let factories: [Factory] = [
        Factory(name: "dataTask(with:completionHandler:)", expectedClass: "CountingDataTask") { fixture in
            let done = OneShot<Void>()
            try fixture.session.dataTask(with: Request(url: fixture.server.url("/json"))) { _, _, _ in done.send(())
            }.resume()
            try await done.value()
        },
        Factory(name: "HTTPSessionManager.get(_:completionHandler:)", expectedClass: "CountingDataTask") { fixture in
            let http = HTTPSessionManager(baseURL: fixture.server.url("/"), session: fixture.session)
            let done = OneShot<Void>()
            try http.get("json") { _, _, _ in done.send(()) }
            try await done.value()
        },
        Factory(name: "HTTPSessionManager.get(_:) async", expectedClass: "CountingDataTask") { fixture in
            let http = HTTPSessionManager(baseURL: fixture.server.url("/"), session: fixture.session)
            _ = try await http.get("json")
        },
        Factory(name: "responseObject(for:)", expectedClass: "CountingDataTask") { fixture in
            _ = try await fixture.session.responseObject(for: Request(url: fixture.server.url("/json")))
        },
        Factory(name: "data(for:)", expectedClass: "CountingDataTask") { fixture in
            _ = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        },
        Factory(name: "value(for:serializer:)", expectedClass: "CountingDataTask") { fixture in
            _ = try await fixture.session.value(
                for: Request(url: fixture.server.url("/json")), serializer: StringResponseSerializer())
        },
        Factory(name: "bytes(for:)", expectedClass: "CountingDataTask") { fixture in
            let (_, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/bytes/4096")))
            for try await _ in body {}
        },
        Factory(name: "dataStreamTask(with:eventHandler:)", expectedClass: "CountingDataTask") { fixture in
            let done = OneShot<Void>()
            try fixture.session.dataStreamTask(with: Request(url: fixture.server.url("/bytes/4096"))) { event in
                if case .complete = event { done.send(()) }
            }.resume()
            try await done.value()
        },
        Factory(name: "events(for:), three connections", expectedClass: "CountingDataTask") { fixture in
            let events = fixture.session.events(
                for: Request(url: fixture.server.url("/events/4?dropEvery=2&retry=10&size=16")))
            for try await _ in events {}
        },
        Factory(name: "uploadTask(with:from:)", expectedClass: "CountingUploadTask") { fixture in
            let done = OneShot<Void>()
            try fixture.session.uploadTask(
                with: Request(url: fixture.server.url("/echo"), method: "POST"), from: Data("hello".utf8),
                completionHandler: { _, _, _ in done.send(()) }
            ).resume()
            try await done.value()
        },
        Factory(name: "uploadTask(withStreamedRequest:bodyProvider:)", expectedClass: "CountingUploadTask") {
            fixture in
            let done = OneShot<Void>()
            try fixture.session.uploadTask(
                withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"),
                bodyProvider: BodyStream(data: Data("streamed".utf8)), completionHandler: { _, _, _ in done.send(()) }
            ).resume()
            try await done.value()
        },
        Factory(name: "upload(for:from:)", expectedClass: "CountingUploadTask") { fixture in
            _ = try await fixture.session.upload(
                for: Request(url: fixture.server.url("/echo"), method: "POST"), from: Data("hello".utf8))
        },
        Factory(name: "upload(for:fromFile:)", expectedClass: "CountingUploadTask") { fixture in
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            let file = scratch.url.appendingPathComponent("body.txt")
            try Data("from a file".utf8).write(to: file)
            _ = try await fixture.session.upload(
                for: Request(url: fixture.server.url("/echo"), method: "POST"), fromFile: file)
        },
        Factory(name: "downloadTask(with:completionHandler:)", expectedClass: "CountingDownloadTask") { fixture in
            let done = OneShot<Void>()
            try fixture.session.downloadTask(
                with: Request(url: fixture.server.url("/bytes/4096")),
                completionHandler: { _, url, _ in
                    if let url { try? FileManager.default.removeItem(at: url) }
                    done.send(())
                }
            ).resume()
            try await done.value()
        },
        Factory(name: "download(for:to:)", expectedClass: "CountingDownloadTask") { fixture in
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            _ = try await fixture.session.download(
                for: Request(url: fixture.server.url("/bytes/4096")), to: scratch.url.appendingPathComponent("b"))
        },
    ]

    @Test(
        "the subclass sees one resume() per taskDidResume, and every announced task is an instance of it",
        arguments: factories)
    func everyFactory(_ factory: Factory) async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(
            dataTask: CountingDataTask.self, uploadTask: CountingUploadTask.self,
            downloadTask: CountingDownloadTask.self)
        let announced = AnnouncedTasks(center: fixture.center)
        try await factory.run(fixture)
        let resumes = HookCalls.calls(session: fixture.session.identifier).filter { $0.method == "resume" }
        // Every task the factory made has completed once it returns (or, for the closure forms, once its
        // handler ran): wait for the notifications of all of them.
        try await fixture.recorder.waitForCompletions(max(resumes.count, 1))
        let posted = announced.all.filter { $0.name == "resume" }
        #expect(!posted.isEmpty)
        #expect(resumes.count == posted.count, "\(factory.name): resume() calls \(resumes) against \(posted)")
        #expect(Set(resumes.map(\.task)) == Set(posted.map(\.task)))
        #expect(fixture.recorder.completions.count == posted.count)
        #expect(
            posted.allSatisfy { $0.className == factory.expectedClass },
            "\(factory.name): \(posted.map(\.className))")
        try await fixture.tearDown()
    }

    @Test("the download a data task becomes is an instance of the download class named, as the data task is of its own")
    func becomingDownload() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(
            dataTask: CountingDataTask.self, downloadTask: CountingDownloadTask.self)
        let announced = AnnouncedTasks(center: fixture.center)
        let became = OneShot<String>()
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        fixture.session.dataTaskDidBecomeDownloadTask = { _, download in became.send("\(type(of: download))") }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/20000")), completionHandler: log.handler)
        task.resume()
        #expect(try await became.value() == "CountingDownloadTask")
        try await fixture.recorder.waitForCompletions(1)
        let resumes = HookCalls.calls(session: fixture.session.identifier).filter { $0.method == "resume" }
        #expect(resumes.map(\.task) == [task.taskIdentifier])
        #expect(announced.all.map(\.name) == ["resume"])
        #expect(announced.all.allSatisfy { $0.className == "CountingDataTask" })
        if let url = log.all.first?.object as? URL { try? FileManager.default.removeItem(at: url) }
        try await fixture.tearDown()
    }

    @Test("a data task that became a download: its progress object's pause and resume run the data task's overrides")
    func becameDownloadProgressControl() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(
            dataTask: CountingDataTask.self, downloadTask: CountingDownloadTask.self)
        let announced = AnnouncedTasks(center: fixture.center)
        let became = OneShot<Void>()
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        fixture.session.dataTaskDidBecomeDownloadTask = { dataTask, _ in
            // Paused before the body is let through, so the resume below comes before the task completes.
            dataTask.downloadProgress.pause()
            became.send(())
        }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/20000")), completionHandler: log.handler)
        task.resume()
        try await became.value()
        #expect(task.state == .suspended)
        task.downloadProgress.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error == nil)
        // The notifications name the data task the caller holds: the overrides that run are its class's.
        let calls = HookCalls.calls(session: fixture.session.identifier)
        #expect(calls.map(\.method) == ["resume", "suspend", "resume"])
        #expect(calls.allSatisfy { $0.className == "CountingDataTask" }, "\(calls)")
        #expect(announced.all.map(\.name) == ["resume", "suspend", "resume"])
        #expect(announced.all.allSatisfy { $0.className == "CountingDataTask" })
        if let url = log.all.first?.object as? URL { try? FileManager.default.removeItem(at: url) }
        try await fixture.tearDown()
    }

    @Test("a suspend and resume of a streamed body's task run the subclass's overrides, announced once each")
    func streamedSuspendResume() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskClasses = TaskClasses(dataTask: CountingDataTask.self)
        let announced = AnnouncedTasks(center: fixture.center)
        // 16 MiB: far above the stream's 1 MiB high watermark, so the transfer can't end before the body is
        // read, however late this task resumes after the head (busy cooperative threads can take a second).
        let (_, body) = try await fixture.session.bytes(for: Request(url: fixture.server.url("/bytes/\(16 << 20)")))
        let task = body.task
        #expect(task is CountingDataTask)
        task.suspend()
        #expect(task.state == .suspended)
        task.resume()
        for try await _ in body {}
        try await fixture.recorder.waitForCompletions(1)
        let calls = HookCalls.calls(session: fixture.session.identifier).map(\.method)
        #expect(calls == ["resume", "suspend", "resume"])
        #expect(announced.all.map(\.name) == ["resume", "suspend", "resume"])
        try await fixture.tearDown()
    }
}
