import CCurl
import Foundation
import HeraldTesting
import Testing

@testable import Herald

@Suite("Memory given back on a loop thread")
struct LoopThreadFreesTests {
    private static func block(_ bytes: Int) throws -> UnsafeMutableRawPointer {
        try #require(malloc(bytes))
    }

    /// `bytes` received by a memory sink whose body goes back to `frees`, as the sink hands it over.
    private static func collect(_ bytes: Data, releasingTo frees: LoopThreadFrees) throws -> Data {
        let sink = MemoryBodySink(frees: frees)
        let response = HTTPResponse(
            url: try #require(URL(string: "http://127.0.0.1/")), statusCode: 200, headers: [:],
            httpVersion: "HTTP/1.1")
        _ = sink.begin(response: response, declaredLength: Int64(bytes.count))
        bytes.withUnsafeBytes { #expect(sink.write($0) == nil) }
        return sink.finish()
    }

    /// How many bytes a `malloc(bytes)` block really holds, which is what the queue counts.
    private static func usableSize(of bytes: Int) throws -> Int {
        let probe = try block(bytes)
        defer { free(probe) }
        return herald_malloc_usable_size(probe)
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
        let unit = try Self.usableSize(of: 1000)
        let frees = LoopThreadFrees(largestDeferred: 2000, byteLimit: 4 * unit)
        frees.release(try Self.block(2048), bytes: 2048)
        #expect(frees.waitingCount == 0)
        for _ in 0..<4 { frees.release(try Self.block(1000), bytes: 1000) }
        #expect(frees.waitingCount == 4)
        frees.release(try Self.block(1000), bytes: 1000)
        frees.release(try Self.block(1), bytes: 1)
        #expect(frees.waitingCount == 4)
        frees.drain()
        frees.release(try Self.block(1000), bytes: 1000)
        #expect(frees.waitingCount == 1)
        frees.drain()
    }

    @Test("a block counts what it holds, not the length it is released with")
    func blocksCountTheirUsableSize() throws {
        let frees = LoopThreadFrees(largestDeferred: 500, byteLimit: 1 << 20)
        // A Data may be handed fewer bytes than its block holds: the 1,000-byte block is over the limit.
        frees.release(try Self.block(1000), bytes: 10)
        #expect(frees.waitingCount == 0)
        frees.release(try Self.block(400), bytes: 10)
        #expect(frees.waitingCount == 1)
        frees.drain()
    }

    @Test("releases from four threads while another drains all along: every block is freed exactly once")
    func concurrentReleasesAndDrains() async throws {
        let frees = LoopThreadFrees(largestDeferred: 4096, byteLimit: 64 * 1024)
        let perThread = 2_000
        let releasersLeft = Countdown(4)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for index in 0..<perThread {
                        let bytes = 16 + index % 2_000
                        guard let pointer = malloc(bytes) else { continue }
                        frees.release(pointer, bytes: bytes)
                    }
                    releasersLeft.countDown()
                }
            }
            group.addTask {
                // Drains for as long as any thread still releases, and once more after.
                while releasersLeft.remaining > 0 {
                    frees.drain()
                    await Task.yield()
                }
                frees.drain()
            }
        }
        #expect(frees.waitingCount == 0)
    }

    @Test("a body collected in memory goes back to its sink's queue when its last Data lets go of it")
    func memoryBodyIsReleasedToTheQueue() throws {
        let frees = LoopThreadFrees()
        let bytes = Data((0..<3_000).map { UInt8($0 % 251) })
        var body: Data? = try Self.collect(bytes, releasingTo: frees)
        #expect(body == bytes)
        #expect(frees.waitingCount == 0)
        var copy = body
        body = nil
        #expect(frees.waitingCount == 0)
        // Storage with a deallocator of its own can't grow in place: appending copies the bytes into new
        // storage and lets go of the old.
        copy?.append(1)
        #expect(copy?.count == bytes.count + 1)
        #expect(frees.waitingCount == 1)
        copy = nil
        frees.drain()
        #expect(frees.waitingCount == 0)
    }

    @Test("a body short enough to be kept inline gives its block back at once, still correct")
    func inlineBodyGivesItsBlockBackAtOnce() throws {
        let frees = LoopThreadFrees()
        let bytes = Data("short".utf8)
        let body = try Self.collect(bytes, releasingTo: frees)
        #expect(body == bytes)
        // Data copies a few bytes into itself and lets go of the block right away.
        #expect(frees.waitingCount == 1)
        frees.drain()
        #expect(body == bytes)
    }

    @Test("bodies released while later transfers run stay intact until their last Data lets go of them")
    func sessionBodiesStayIntact() async throws {
        let fixture = try await SessionFixture.make()
        var kept: [(index: Int, body: Data)] = []
        for index in 0..<30 {
            let url = fixture.server.url("/echo?request=\(index)&pad=\(String(repeating: "x", count: index * 40))")
            let (body, response) = try await fixture.session.data(for: Request(url: url))
            #expect(response.statusCode == 200)
            // Every other body is let go of at once, and its memory freed by the engine while the kept ones
            // are still read.
            if index % 2 == 0 { kept.append((index, body)) }
        }
        await fixture.session.engineBarrier()
        #expect(kept.count == 15)
        for (index, body) in kept {
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: body)
            #expect(echoed.uri.hasPrefix("/echo?request=\(index)&pad="))
            #expect(echoed.uri.count == "/echo?request=\(index)&pad=".count + index * 40)
        }
        try await fixture.tearDown()
    }
}
