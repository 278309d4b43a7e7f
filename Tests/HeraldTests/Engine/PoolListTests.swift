import Foundation
import HeraldTesting
import Testing

@testable import Herald

/// A multi handle keeps its transfers in a list where the last one moves into the place of one that leaves,
/// and finds a finished transfer from its easy handle (`CURLINFO_PRIVATE`): these pin down that every transfer
/// still finishes once, with its own outcome, whatever order they leave in.
@Suite("The pool's list of transfers")
struct PoolListTests {
    @Test("transfers cancelled from the middle of the pool leave the others to finish with their own bodies")
    func cancelFromTheMiddle() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // The second and the fifth never get an answer; the others get theirs in two chunks 300 ms apart, so
        // all eight are in the pool together when the two are cancelled.
        let stalled: Set<Int> = [1, 4]
        let sizes = (1...8).map { 1_000 * $0 }
        let logs = sizes.map { _ in CompletionLog() }
        let tasks = try sizes.indices.map { index in
            let path =
                stalled.contains(index)
                ? "/fault/stall" : "/bytes/\(sizes[index])?chunkSize=\(sizes[index] / 2)&delayMs=300"
            return try fixture.session.dataTask(
                with: Request(url: fixture.server.url(path)), completionHandler: logs[index].handler)
        }
        tasks.forEach { $0.resume() }
        try await fixture.server.waitForRequests(count: sizes.count)
        for index in stalled { tasks[index].cancel() }
        try await fixture.recorder.waitForCompletions(sizes.count)
        for (index, log) in logs.enumerated() {
            #expect(log.all.count == 1)
            if stalled.contains(index) {
                #expect(log.all.first?.error?.code == .cancelled)
            } else {
                #expect(log.all.first?.error == nil)
                let body = try #require(log.all.first?.object as? Data)
                #expect(body == Data(TestServer.expectedBytes(in: 0..<sizes[index])))
            }
        }
        await fixture.session.engineBarrier()
        #expect(await fixture.session.poolCounts().transfers == 0)
        try await fixture.tearDown()
    }

    @Test("many transfers finishing in whatever order curl reports them each complete once")
    func manyInAnyOrder() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let logs = (0..<40).map { _ in CompletionLog() }
        // Different delays, so they finish in another order than they started.
        let tasks = try logs.enumerated().map { index, log in
            let path = "/bytes/\(100 + index)?chunkSize=50&delayMs=\((index * 7) % 40)"
            return try fixture.session.dataTask(
                with: Request(url: fixture.server.url(path)), completionHandler: log.handler)
        }
        tasks.forEach { $0.resume() }
        try await fixture.recorder.waitForCompletions(tasks.count)
        for (index, log) in logs.enumerated() {
            #expect(log.all.count == 1)
            #expect(log.all.first?.error == nil)
            #expect((log.all.first?.object as? Data)?.count == 100 + index)
        }
        await fixture.session.engineBarrier()
        #expect(await fixture.session.poolCounts().transfers == 0)
        try await fixture.tearDown()
    }
}
