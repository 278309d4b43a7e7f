import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("PipeReader", .timeLimit(.minutes(1)))
struct PipeReaderTests {
    @Test("reads a child's output to its end, every byte in order over several reads, then ends once")
    func readsToTheEnd() async throws {
        // More than one read's worth (64 KiB), so that the chunks have to be joined in order.
        let count = 200_000
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // `seq` is cut off by `head`; SIGPIPE is ignored in this process, and so in the child, which would
        // report the broken pipe on the test's standard error.
        process.arguments = ["-c", "seq 1 \(count) 2>/dev/null | head -c \(count)"]
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        let received = Locked((data: Data(), chunks: 0, emptyChunks: 0, ends: 0))
        let (ended, endedContinuation) = AsyncStream.makeStream(of: Void.self)
        try process.run()
        PipeReader.start(
            reading: pipe.fileHandleForReading, name: "pipe-reader-test",
            onData: { data in
                received.withLock {
                    $0.data.append(data)
                    $0.chunks += 1
                    if data.isEmpty { $0.emptyChunks += 1 }
                }
            },
            onEnd: {
                received.withLock { $0.ends += 1 }
                endedContinuation.yield()
                endedContinuation.finish()
            })
        for await _ in ended { break }
        process.waitUntilExit()
        let expected = Data((1...count).map(String.init).joined(separator: "\n").utf8.prefix(count))
        let result = received.withLock { $0 }
        #expect(result.data == expected)
        #expect(result.chunks >= 2)
        #expect(result.emptyChunks == 0)
        #expect(result.ends == 1)
    }
}
