import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("Swift task cancellation cancels the transfer")
struct AsyncCancellationTests {
    @Test("cancelling the Swift task stops a running transfer: the server sees the close, the call throws cancelled")
    func cancelRunningTransfer() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let url = fixture.server.url("/fault/stall")
        let call = startCall { () async throws(HeraldError) in try await session.data(for: Request(url: url)) }
        try await fixture.server.waitForRequests(count: 1)
        try await fixture.server.waitForOpenConnections(1)
        call.cancel()
        let result = try await outcome(of: call)
        #expect(throws: HeraldError.self) { try result.get() }
        if case .failure(let error) = result { #expect(error.code == .cancelled) }
        try await fixture.server.waitForOpenConnections(0)
        // Everything the session posts for a task comes before its invalidation completes, so a second
        // taskDidComplete would already be recorded.
        session.invalidate(cancelingTasks: false)
        _ = try await fixture.recorder.waitForInvalidation()
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete, .invalidate])
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }

    @Test("cancelling a download removes its temporary file and throws cancelled")
    func cancelRunningDownload() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("never.bin")
        // Slow enough that the transfer is still running when it is cancelled.
        let url = fixture.server.url("/bytes/\(64 * 1024 * 1024)?chunkSize=65536&delayMs=50")
        let call = startCall { () async throws(HeraldError) in
            try await session.download(for: Request(url: url), to: destination)
        }
        try await fixture.server.waitUntil { $0.bodyBytesSent > 0 }
        let task = try #require(session.downloadTasks.first)
        call.cancel()
        let result = try await outcome(of: call)
        if case .failure(let error) = result {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("a cancelled download returned \(result)")
        }
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(!FileManager.default.fileExists(atPath: task.temporaryURL.path))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        try await fixture.server.waitForOpenConnections(0)
        try await fixture.tearDown()
    }

    @Test("an already-cancelled Swift task sends nothing and completes its session task once with cancelled")
    func cancelledBeforeStart() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let url = fixture.server.url("/json")
        let call = startCall { () async throws(HeraldError) in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await session.data(for: Request(url: url))
        }
        let result = try await outcome(of: call)
        if case .failure(let error) = result {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("a cancelled call returned \(result)")
        }
        session.invalidate(cancelingTasks: false)
        _ = try await fixture.recorder.waitForInvalidation()
        // No taskDidResume: the task was cancelled while still suspended.
        #expect(fixture.recorder.events.map(\.kind) == [.complete, .invalidate])
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        #expect(fixture.server.statistics.acceptedConnections == 0)
        #expect(fixture.server.requestCount == 0)
        try await fixture.tearDown()
    }

    @Test("cancellation after the transfer finished changes nothing: the call returns its result")
    func cancelAfterCompletion() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let url = fixture.server.url("/json")
        let call = startCall { () async throws(HeraldError) in
            let result = try await session.data(for: Request(url: url))
            withUnsafeCurrentTask { $0?.cancel() }
            return result
        }
        let result = try await outcome(of: call)
        #expect(try result.get().1.statusCode == 200)
        _ = try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error == nil)
        try await fixture.tearDown()
    }
}
