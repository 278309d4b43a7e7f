import Foundation
import HeraldTesting
import Testing

/// A download that can't be moved into `--output-dir`: the CLI says so, and says where the file is kept only when
/// it is (Herald keeps it where it was written, in its private folder inside `--output-dir`).
@Suite("activity-counter: a file that can't be saved is reported, never claimed kept where it is not")
struct KeptFileTests {
    @Test("--output-dir removed mid-download: exit 73, 'could not be saved', and no claim of a file kept anywhere")
    func outputDirectoryGoneBeforeTheMove() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let size = 1024 * 1024
        let process = try ActivityCounterProcess(
            [
                "fetch", server.url("/bytes/\(size)?chunkSize=16384&delayMs=100").absoluteString,
                "--output-dir", scratch.path("out"),
            ],
            environment: ["TMPDIR": scratch.path("tmp")])
        // The directory passed the pre-flight check; take it away while the body is still arriving. The
        // temporary file was in it (in Herald's private folder there), so it goes too.
        try await server.waitUntil(timeout: .seconds(30)) { $0.bodyBytesSent >= 64 * 1024 }
        try FileManager.default.removeItem(atPath: scratch.path("out"))
        let run = try await process.finish()
        try await server.shutdown()
        #expect(run.status == 73, "stderr: \(run.stderr)")
        #expect(try scratch.files(in: "tmp") == [])
        #expect(!run.stderr.contains("downloaded but not saved; the file is kept at"))
        #expect(!run.stdout.contains("kept at"))
        #expect(run.stdout.contains("could not be saved in --output-dir"))
    }
}
