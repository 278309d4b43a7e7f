import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Suspend really pauses the transfer")
struct SuspendResumeTests {
    @Test("a suspended multi-megabyte data task resumes without re-transferring bytes already received")
    func resumeContinuesWhereItStopped() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 8 * 1024 * 1024
        let log = CompletionLog()
        // Suspended from the progress handler at the first bytes, not from the test's own task: beside the
        // other suites, the test's task could wait longer than the whole 2.5 s stream before it ran again.
        let suspender = Locked<(task: SessionTask?, done: Bool)>((nil, false))
        // And the body stops at 1 MiB until the suspend is seen, so the suspend lands mid-body.
        let url = fixture.server.url("/bytes/\(size)?chunkSize=65536&delayMs=20&gate=body&gateAfter=1048576")
        let task = try fixture.session.dataTask(
            with: Request(url: url),
            downloadProgress: { progress in
                guard progress.completedUnitCount > 0 else { return }
                let first = suspender.withLock { state -> SessionTask? in
                    defer { state.done = true }
                    return state.done ? nil : state.task
                }
                first?.suspend()
            },
            completionHandler: log.handler)
        suspender.withLock { $0.task = task }
        task.resume()
        try await fixture.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        let receivedWhenSuspended = task.downloadProgress.completedUnitCount
        #expect(receivedWhenSuspended > 0)
        #expect(receivedWhenSuspended < Int64(size))
        fixture.server.openGate("body")
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        let body = try #require(log.all.first?.object as? Data)
        #expect(body.count == size)
        #expect(body.prefix(1000) == Data(TestServer.expectedBytes(in: 0..<1000)))
        #expect(body.suffix(1000) == Data(TestServer.expectedBytes(in: (size - 1000)..<size)))
        #expect(fixture.server.requestCount == 1)
        // The server counts a write when NIO completes it, which can trail the client's last byte.
        try await fixture.server.waitUntil { $0.bodyBytesSent >= size }
        #expect(fixture.server.bodyBytesSent == size)
        #expect(task.downloadProgress.completedUnitCount == Int64(size))
        #expect(task.downloadProgress.totalUnitCount == Int64(size))
        try await fixture.tearDown()
    }

    @Test("pausing and resuming through the progress object acts on the task and posts the same notifications")
    func progressControlsTheTask() async throws {
        let fixture = try await SessionFixture.make()
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/fault/stall")))
        task.downloadProgress.resume()
        try await fixture.server.waitForRequests(count: 1)
        task.downloadProgress.pause()
        #expect(task.state == .suspended)
        task.uploadProgress.resume()
        #expect(task.state == .running)
        task.downloadProgress.cancel()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        #expect(task.error?.code == .cancelled)
        #expect(task.downloadProgress.isFinished)
        try await fixture.tearDown()
    }

    @Test("a request body is sent whole with its method, headers and exact upload progress")
    func postWithBody() async throws {
        let fixture = try await SessionFixture.make()
        let body = Data((0..<200_000).map { UInt8($0 % 256) })
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(
                url: fixture.server.url("/echo"), method: "PATCH", headers: ["X-Herald": "yes"], body: body),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let echoed = try #require(log.all.first?.object as? JSONValue?)
        #expect(echoed?["method"] == "PATCH")
        #expect(echoed?["bodyLength"] == .number(200_000))
        #expect(task.uploadProgress.completedUnitCount == 200_000)
        #expect(task.uploadProgress.totalUnitCount == 200_000)
        let recorded = try #require(fixture.server.requests(forPath: "/echo").first)
        #expect(recorded.headerValue("X-Herald") == "yes")
        #expect(recorded.headerValue("Expect") == nil)
        #expect(recorded.bodyByteCount == 200_000)
        try await fixture.tearDown()
    }
}
