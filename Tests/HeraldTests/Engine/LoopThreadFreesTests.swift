import Foundation
import HeraldTesting
import Testing

@testable import Herald

@Suite("Memory given back on a loop thread")
struct LoopThreadFreesTests {
    private static func block(_ bytes: Int) throws -> UnsafeMutableRawPointer {
        try #require(malloc(bytes))
    }

    @Test("a small block waits for the next drain; a drain frees all that waits, and keeps nothing")
    func smallBlocksWaitForTheDrain() throws {
        let frees = LoopThreadFrees(largestDeferred: 1024, byteLimit: 8192)
        for _ in 0..<3 { frees.release(try Self.block(512), bytes: 512) }
        #expect(frees.waitingCount == 3)
        frees.drain()
        #expect(frees.waitingCount == 0)
        // The queue works again after a drain (it reuses the emptied buffer).
        frees.release(try Self.block(100), bytes: 100)
        #expect(frees.waitingCount == 1)
        frees.drain()
        frees.drain()
        #expect(frees.waitingCount == 0)
    }

    @Test("a block over the size limit, or past the byte limit, is freed at once instead of waiting")
    func limitsFreeAtOnce() throws {
        let frees = LoopThreadFrees(largestDeferred: 1024, byteLimit: 4096)
        frees.release(try Self.block(2048), bytes: 2048)
        #expect(frees.waitingCount == 0)
        for _ in 0..<4 { frees.release(try Self.block(1024), bytes: 1024) }
        #expect(frees.waitingCount == 4)
        frees.release(try Self.block(1024), bytes: 1024)
        frees.release(try Self.block(1), bytes: 1)
        #expect(frees.waitingCount == 4)
        frees.drain()
        frees.release(try Self.block(1024), bytes: 1024)
        #expect(frees.waitingCount == 1)
        frees.drain()
    }

    @Test("releases from four threads while another drains: every block is freed exactly once")
    func concurrentReleasesAndDrains() async throws {
        let frees = LoopThreadFrees(largestDeferred: 4096, byteLimit: 64 * 1024)
        let perThread = 2_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for index in 0..<perThread {
                        let bytes = 16 + index % 2_000
                        guard let pointer = malloc(bytes) else { continue }
                        frees.release(pointer, bytes: bytes)
                    }
                }
            }
            group.addTask {
                for _ in 0..<500 { frees.drain() }
            }
        }
        frees.drain()
        #expect(frees.waitingCount == 0)
    }

    @Test("a body collected in memory goes back to its sink's queue when its last Data lets go of it")
    func memoryBodyIsReleasedToTheQueue() throws {
        let frees = LoopThreadFrees()
        let sink = MemoryBodySink(frees: frees)
        let bytes = Data((0..<3_000).map { UInt8($0 % 251) })
        let response = HTTPResponse(
            url: URL(string: "http://127.0.0.1/")!, statusCode: 200, headers: [:], httpVersion: "HTTP/1.1")
        _ = sink.begin(response: response, declaredLength: Int64(bytes.count))
        bytes.withUnsafeBytes { #expect(sink.write($0) == nil) }
        var body: Data? = sink.finish()
        #expect(body == bytes)
        #expect(frees.waitingCount == 0)
        var copy = body
        body = nil
        #expect(frees.waitingCount == 0)
        // A mutation copies the bytes out first (copy on write), and the old storage is let go of.
        copy?.append(1)
        #expect(copy?.count == bytes.count + 1)
        #expect(frees.waitingCount == 1)
        copy = nil
        frees.drain()
        #expect(frees.waitingCount == 0)
    }

    @Test("bodies released while later transfers run stay intact until their last Data lets go of them")
    func sessionBodiesStayIntact() async throws {
        let fixture = try await SessionFixture.make()
        var kept: [Data] = []
        for index in 0..<30 {
            let (body, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
            #expect(response.statusCode == 200)
            // Every other body is let go of at once, and its memory freed by the engine while the kept ones
            // are still read.
            if index % 2 == 0 { kept.append(body) }
        }
        await fixture.session.engineBarrier()
        #expect(kept.count == 15)
        #expect(kept.allSatisfy { !$0.isEmpty && $0 == kept[0] })
        #expect(try JSONSerialization.jsonObject(with: kept[14]) is [String: Any])
        try await fixture.tearDown()
    }
}
