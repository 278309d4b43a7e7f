import Foundation
import Herald
@testable import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Upload tasks: data, files, streams, rewinding")
struct UploadTaskTests {
    @Test("an upload from a file streams it with Content-Length, exact upload progress and no Expect")
    func uploadFromFile() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 3 * 1024 * 1024 + 17
        let file = try PatternFile.make(count: size, in: scratch.url)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/status/201"), method: "PUT"), fromFile: file,
            completionHandler: log.handler)
        #expect(fixture.session.uploadTasks.map(\.taskIdentifier) == [task.taskIdentifier])
        #expect(fixture.session.dataTasks.isEmpty)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.response?.statusCode == 201)
        let recorded = try #require(fixture.server.requests(forPath: "/status/201").first)
        #expect(recorded.method == "PUT")
        #expect(recorded.bodyByteCount == size)
        #expect(recorded.headerValue("Content-Length") == "\(size)")
        #expect(recorded.headerValue("Expect") == nil)
        #expect(task.uploadProgress.completedUnitCount == Int64(size))
        #expect(task.uploadProgress.totalUnitCount == Int64(size))
        #expect(fixture.session.uploadTasks.isEmpty)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("an upload from data sends exactly those bytes")
    func uploadFromData() async throws {
        let fixture = try await SessionFixture.make()
        let body = Data(TestServer.expectedBytes(in: 0..<100_000))
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/echo"), method: "POST"), from: body, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let echoed = try #require(log.all.first?.object as? JSONValue?)
        #expect(echoed?["bodyLength"] == .number(100_000))
        #expect(task.uploadProgress.completedUnitCount == 100_000)
        try await fixture.tearDown()
    }

    @Test("a 307 on a POST from a file resends the whole body to the new location")
    func redirect307ResendsFileBody() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let scratch = try ScratchDirectory()
        let size = 300_000
        let file = try PatternFile.make(count: size, in: scratch.url)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/redirect-to?url=/echo&status=307"), method: "POST"),
            fromFile: file, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: try #require(call.object as? Data))
        #expect(echoed.method == "POST")
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(fixture.server.requests(forPath: "/redirect-to").first?.bodyByteCount == size)
        #expect(fixture.server.requests(forPath: "/echo").first?.bodyByteCount == size)
        #expect(task.uploadProgress.completedUnitCount == Int64(size))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("taskDidSendBodyData reports the bytes each send hands over: after a 307 they add up to both sends")
    func sentBytesAcrossAResend() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let calls = Locked<[(sent: Int64, total: Int64)]>([])
        fixture.session.taskDidSendBodyData = { _, sent, total, _ in calls.withLock { $0.append((sent, total)) } }
        // Small enough to go in one read each time: the second send's total is no higher than the first's.
        let size = 1000
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/redirect-to?url=/echo&status=307"), method: "POST"),
            from: Data(TestServer.expectedBytes(in: 0..<size)))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // The hook's calls were queued on the completion queue before the completion.
        await fixture.session.completionQueueBarrier()
        #expect(task.error == nil)
        let sent = [
            fixture.server.requests(forPath: "/redirect-to").first?.bodyByteCount,
            fixture.server.requests(forPath: "/echo").first?.bodyByteCount,
        ]
        #expect(sent == [size, size])
        let reported = calls.withLock { $0 }
        #expect(reported.reduce(0) { $0 + $1.sent } == Int64(2 * size), "\(reported)")
        #expect(reported.last?.total == Int64(size))
        try await fixture.tearDown()
    }

    @Test("an adapter that makes an upload a HEAD fails it with invalidRequest: nothing goes out without its body")
    func adaptedToHead() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.interceptor = Interceptor(adapt: { request, _ in
            var request = request
            request.method = "HEAD"
            return request
        })
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/echo"), method: "POST"), from: Data("body".utf8),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // Before, the request went out as a HEAD, and the body was dropped.
        #expect(log.all.first?.error?.code == .invalidRequest)
        #expect(fixture.server.requests(forPath: "/echo").isEmpty)
        try await fixture.tearDown()
    }

    @Test("a streamed body of unknown length is sent chunked")
    func streamedBodyIsChunked() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let body = Data(TestServer.expectedBytes(in: 0..<70_000))
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"),
            bodyProvider: BodyStream(data: body), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: try #require(log.all.first?.object as? Data))
        #expect(echoed.bodyBytes == Array(body))
        let recorded = try #require(fixture.server.requests(forPath: "/echo").first)
        #expect(recorded.headerValue("Transfer-Encoding") == "chunked")
        #expect(recorded.headerValue("Content-Length") == nil)
        #expect(task.uploadProgress.completedUnitCount == 70_000)
        #expect(task.uploadProgress.totalUnitCount == -1)
        try await fixture.tearDown()
    }

    @Test("a stream that must be resent and cannot be rewound fails with bodyStream and says why")
    func streamWithoutRewindFails() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/redirect-to?url=/echo&status=307"), method: "POST"),
            bodyProvider: BodyStream(data: Data(repeating: 7, count: 50_000)), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let error = try #require(log.all.first?.error)
        #expect(error.code == .bodyStream)
        #expect(error.message.contains("taskNeedNewBodyStream"))
        #expect(fixture.server.requests(forPath: "/echo").isEmpty)
        try await fixture.tearDown()
    }

    @Test("a stream that must be resent is replaced by the one taskNeedNewBodyStream provides")
    func streamRewindsThroughHook() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let body = Data(TestServer.expectedBytes(in: 0..<50_000))
        let asked = Locked<[Int]>([])
        fixture.session.taskNeedNewBodyStream = { task in
            asked.withLock { $0.append(task.taskIdentifier) }
            return BodyStream(data: body)
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url("/redirect-to?url=/echo&status=307"), method: "POST"),
            bodyProvider: BodyStream(data: body), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error == nil)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: try #require(log.all.first?.object as? Data))
        #expect(echoed.bodyBytes == Array(body))
        #expect(asked.withLock { $0 } == [task.taskIdentifier])
        try await fixture.tearDown()
    }

    @Test("a provider that throws fails the task with bodyStream and the thrown error as underlying")
    func throwingProvider() async throws {
        struct Broken: Error {}
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"),
            bodyProvider: BodyStream { _ in throw Broken() }, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let error = try #require(log.all.first?.error)
        #expect(error.code == .bodyStream)
        #expect(error.underlying is Broken)
        try await fixture.tearDown()
    }

    @Test("a missing upload file is refused when the task is created")
    func missingFile() async throws {
        let fixture = try await SessionFixture.make()
        let error = #expect(throws: HeraldError.self) {
            try fixture.session.uploadTask(
                with: Request(url: fixture.server.url("/echo"), method: "PUT"),
                fromFile: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)"))
        }
        #expect(error?.code == .fileIO)
        try await fixture.tearDown()
    }

    @Test(
        "an upload file removed, or made a FIFO, before resume() fails the task with fileIO, once; nothing is sent",
        arguments: [false, true])
    func fileRemovedBeforeStart(replacedByFIFO: Bool) async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let file = try PatternFile.make(count: 10_000, in: scratch.url)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/echo"), method: "PUT"), fromFile: file,
            completionHandler: log.handler)
        try FileManager.default.removeItem(at: file)
        // A FIFO in its place: before, the open in resume() blocked until a writer came, on the caller's thread.
        if replacedByFIFO { try #require(mkfifo(file.path, 0o600) == 0) }
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(10))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .fileIO)
        #expect(log.all.first?.error?.message.contains(file.lastPathComponent) == true)
        if replacedByFIFO { #expect(log.all.first?.error?.message.contains("no longer a regular file") == true) }
        #expect(fixture.server.requests(forPath: "/echo").isEmpty)
        // The session's pool got the prepared handle back or freed it; the next request still works.
        let (_, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/status/204")))
        #expect(response.statusCode == 204)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("suspending and resuming an upload posts suspend and resume once each and sends every byte once")
    func suspendResumeUpload() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 16 * 1024 * 1024
        let file = try PatternFile.make(count: size, in: scratch.url)
        let started = OneShot<Void>()
        // /fault/stall reads the whole body and never answers, so the task can't complete before the
        // suspend lands; it ends with the cancel.
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/fault/stall"), method: "PUT"), fromFile: file,
            progress: { progress in if progress.completedUnitCount > 0 { started.send(()) } })
        task.resume()
        try await started.value()
        task.suspend()
        task.suspend()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        task.resume()
        task.resume()
        try await fixture.server.waitUntil { $0.requests.first?.bodyByteCount == size }
        task.cancel()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        #expect(task.error?.code == .cancelled)
        #expect(task.uploadProgress.completedUnitCount == Int64(size))
        #expect(fixture.server.requestCount == 1)
        scratch.remove()
        try await fixture.tearDown()
    }
}
