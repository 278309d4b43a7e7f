import Foundation
import HeraldTesting
import Testing

/// A download that can't be moved into `--output-dir` is never lost: Herald keeps the file where it was written,
/// and the CLI says where.
@Suite("activity-counter: a file that can't be saved is kept, and its path printed")
struct KeptFileTests {
    @Test(
        "--output-dir removed mid-download: exit 73, the whole file kept in TMPDIR, its path on stderr and in the summary"
    )
    func outputDirectoryGoneBeforeTheMove() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let size = 1024 * 1024
        let process = try ActivityCounterProcess(
            [
                "fetch", server.url("/bytes/\(size)?chunkSize=16384&delayMs=20").absoluteString,
                "--output-dir", scratch.path("out"),
            ],
            environment: ["TMPDIR": scratch.path("tmp")])
        // The directory passed the pre-flight check; take it away while the body is still arriving.
        try await server.waitUntil(timeout: .seconds(30)) { $0.bodyBytesSent >= 64 * 1024 }
        try FileManager.default.removeItem(atPath: scratch.path("out"))
        let run = try await process.finish()
        try await server.shutdown()
        #expect(run.status == 73, "stderr: \(run.stderr)")
        let kept = try scratch.files(in: "tmp")
        try #require(kept.count == 1, "\(kept)")
        let path = scratch.url.appendingPathComponent("tmp").appendingPathComponent(kept[0]).path
        #expect(try scratch.contents("tmp/" + kept[0]) == Data(TestServer.expectedBytes(in: 0..<size)))
        #expect(run.stderr.contains("downloaded but not saved; the file is kept at \(path)"))
        #expect(run.stdout.contains("kept at \(path)"))
        #expect(run.stdout.contains("could not be saved in --output-dir"))
    }
}
