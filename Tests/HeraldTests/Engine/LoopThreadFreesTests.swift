import CCurl
import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Memory given back on a loop thread")
struct LoopThreadFreesTests {
    private static func block(_ bytes: Int) throws -> UnsafeMutableRawPointer {
        try #require(malloc(bytes))
    }

    /// `bytes` received by a memory sink whose body goes back to `frees`, as the sink hands it over.
    private static func collect(_ bytes: Data, releasingTo frees: LoopThreadFrees) throws -> Data {
        let sink = MemoryBodySink(frees: frees)
        let response = ResponseHead(
            url: try #require(URL(string: "http://127.0.0.1/")), statusCode: 200, headers: [:],
            httpVersion: "HTTP/1.1")
        _ = sink.begin(response: response, declaredLength: Int64(bytes.count))
        bytes.withUnsafeBytes { #expect(sink.write($0) == nil) }
        return sink.finish()
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
        // The limit is the four blocks' usable sizes, as the queue counts them (glibc may hand out a chunk a
        // little larger than asked for, depending on what was freed before).
        let four = try (0..<4).map { _ in try Self.block(1000) }
        let frees = LoopThreadFrees(
            largestDeferred: 2000, byteLimit: four.reduce(0) { $0 + herald_malloc_usable_size($1) })
        frees.release(try Self.block(2048), bytes: 2048)
        #expect(frees.waitingCount == 0)
        for block in four { frees.release(block, bytes: 1000) }
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

    @Test("a new body takes a waiting block of its size to twice its size, instead of allocating")
    func waitingBlockIsReused() throws {
        let frees = LoopThreadFrees()
        let small = try Self.block(1000)
        let large = try Self.block(8000)
        frees.release(small, bytes: 1000)
        frees.release(large, bytes: 8000)
        #expect(frees.take(atLeast: 20_000) == nil)
        #expect(frees.take(atLeast: 100) == nil)  // 1,000 bytes is more than twice 100
        let taken = try #require(frees.take(atLeast: 900))
        #expect(taken.block == small)
        #expect(taken.size == herald_malloc_usable_size(small))
        #expect(frees.waitingCount == 1)
        free(taken.block)
        frees.drain()
        #expect(frees.take(atLeast: 8000) == nil)
    }

    @Test("an engine's drain leaves the newest blocks waiting for reuse, and frees the older ones")
    func drainKeepsTheNewest() throws {
        let frees = LoopThreadFrees()
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<5 {
            let block = try Self.block(2000)
            blocks.append(block)
            frees.release(block, bytes: 2000)
        }
        frees.drain(keeping: 2)
        #expect(frees.waitingCount == 2)
        // Taken newest first.
        let newest = try #require(frees.take(atLeast: 2000))
        #expect(newest.block == blocks[4])
        let next = try #require(frees.take(atLeast: 2000))
        #expect(next.block == blocks[3])
        #expect(frees.take(atLeast: 2000) == nil)
        free(newest.block)
        free(next.block)
        // A block over the largest kept for reuse is freed, however new.
        frees.release(try Self.block(2000), bytes: 2000)
        frees.release(
            try Self.block(LoopThreadFrees.largestKeptForReuse + 1), bytes: LoopThreadFrees.largestKeptForReuse + 1)
        frees.drain(keeping: LoopThreadFrees.keptForReuse)
        #expect(frees.waitingCount == 1)
        #expect(frees.take(atLeast: LoopThreadFrees.largestKeptForReuse) == nil)
        // Nothing beyond what is kept: nothing to free.
        frees.release(try Self.block(2000), bytes: 2000)
        frees.drain(keeping: LoopThreadFrees.keptForReuse)
        #expect(frees.waitingCount == 2)
        frees.drain()
        #expect(frees.waitingCount == 0)
    }

    @Test("a finished body's waiting memory becomes the next body's, and both read back intact")
    func nextBodyReusesTheLastOnesMemory() throws {
        let frees = LoopThreadFrees()
        let first = Data((0..<3_000).map { UInt8($0 % 251) })
        var body: Data? = try Self.collect(first, releasingTo: frees)
        let address = body?.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        body = nil
        #expect(frees.waitingCount == 1)
        let second = Data((0..<2_900).map { UInt8(($0 * 7) % 251) })
        let next = try Self.collect(second, releasingTo: frees)
        #expect(next == second)
        #expect(next.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } == address)
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
