import Foundation
import HeraldTesting
import Testing

@testable import ActivityCounter

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT, SIGTERM and SIGHUP sent to the CLI as a child process, mid-download. Nothing sleeps: the test awaits the
/// server having sent bytes, then the child's exit, each with a timeout.
@Suite("activity-counter: signals", .serialized)
struct SignalTests {
    /// A download paced over about 10 s, so a signal after the first 256 KiB always lands mid-body, and a CLI
    /// that waited for the body to end would take seconds longer than the bound on the exit.
    static let size = 4 * 1024 * 1024
    static let path = "/bytes/\(size)?chunkSize=16384&delayMs=40"

    /// Starts `fetch` of the slow download and returns once the server has sent at least 256 KiB of it and the
    /// small download is saved (checked each time the slow one sends a chunk).
    private func startMidDownload(
        _ server: TestServer, scratch: Scratch, extra: [String] = [], url: URL? = nil
    ) async throws -> ActivityCounterProcess {
        let process = try ActivityCounterProcess(
            [
                "fetch", (url ?? server.url(Self.path)).absoluteString, server.url("/json").absoluteString,
                "--output-dir", scratch.path("out"),
            ] + extra,
            environment: ["TMPDIR": scratch.path("tmp")])
        let saved = scratch.path("out/json")
        try await server.waitUntil(timeout: .seconds(30)) {
            $0.bodyBytesSent >= 256 * 1024 && FileManager.default.fileExists(atPath: saved)
        }
        return process
    }

    @Test(
        "SIGINT mid-download: exit 130 at once, the summary printed, no temporary file left",
        arguments: [
            (SIGINT, Int32(130), "interrupted by SIGINT"), (SIGTERM, Int32(143), "terminated by SIGTERM"),
            (SIGHUP, Int32(129), "hung up by SIGHUP"),
        ])
    func interrupt(signal: Int32, status: Int32, summary: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let process = try await startMidDownload(server, scratch: scratch)
        let signalled = ContinuousClock.now
        process.send(signal)
        let run = try await process.finish(timeout: .seconds(10))
        let afterSignal = ContinuousClock.now - signalled
        try await server.shutdown()
        #expect(run.status == status, "stderr: \(run.stderr)")
        // At once, not when the body would have ended (seconds later); the bound leaves room for a loaded machine.
        #expect(afterSignal < .seconds(4))
        #expect(run.stdout.contains("interrupted"))
        #expect(run.stdout.contains("2 URLs"), "\(run.stdout)")
        #expect(run.stdout.contains(summary))
        // The small URL finished and was saved; the big one left nothing behind, here or in $TMPDIR.
        #expect(try scratch.files(in: "out") == ["json"])
        #expect(try scratch.files(in: "tmp") == [])
    }

    @Test(
        "--continue: SIGINT or SIGHUP keeps the partial file, private and password-free; the next run fetches the rest",
        arguments: [(SIGINT, Int32(130)), (SIGHUP, Int32(129))])
    func continueAfterInterrupt(signal: Int32, status: Int32) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        let server = try await TestServer.start()
        var components = try #require(URLComponents(url: server.url(Self.path), resolvingAgainstBaseURL: false))
        components.user = "user"
        components.password = "s3cretPW9"
        let url = try #require(components.url)
        let process = try await startMidDownload(server, scratch: scratch, extra: ["--continue"], url: url)
        process.send(signal)
        let first = try await process.finish(timeout: .seconds(10))
        #expect(first.status == status, "stderr: \(first.stderr)")
        // The partial file and its resume data, in their folder; the small URL's file and the index of where each
        // saved file came from.
        let folder = "out/" + ResumeStore.folderName + "/"
        let kept = try scratch.files(in: folder)
        #expect(kept.count == 2, "\(kept)")
        #expect(
            try scratch.files(in: "out")
                == (kept.map { ResumeStore.folderName + "/" + $0 } + [SavedFileIndex.fileName, "json"]).sorted())
        let partialName = try #require(kept.first { $0.hasSuffix(".part") })
        let resumeName = try #require(kept.first { $0.hasSuffix(".resume") })
        for path in [folder + resumeName, "out/" + SavedFileIndex.fileName] {
            #expect(!String(decoding: try scratch.contents(path), as: UTF8.self).contains("s3cretPW9"))
        }
        for path in [folder + partialName, folder + resumeName, "out/" + SavedFileIndex.fileName, folder] {
            var status = stat()
            #expect(stat(scratch.path(path), &status) == 0)
            #expect(status.st_mode & 0o077 == 0, "\(path) is open to others")
        }
        #expect(try scratch.files(in: "tmp") == [])
        let partialSize = try scratch.contents(folder + partialName).count
        #expect(partialSize > 0 && partialSize < Self.size)
        #expect(first.stdout.contains("partial, kept at"))

        let second = try await ActivityCounterProcess.run(
            ["fetch", url.absoluteString, "--output-dir", scratch.path("out"), "--continue"],
            environment: ["TMPDIR": scratch.path("tmp")])
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let name = "\(Self.size)"
        #expect(try scratch.files(in: "out") == [name, "json", SavedFileIndex.fileName].sorted())
        #expect(try scratch.contents("out/" + name) == Data(TestServer.expectedBytes(in: 0..<Self.size)))
        // The server was asked only for what was missing.
        try await server.waitUntil(timeout: .seconds(10)) { statistics in
            statistics.requests.filter { $0.path == "/bytes/\(Self.size)" }.allSatisfy(\.isComplete)
        }
        let requests = server.requests(forPath: "/bytes/\(Self.size)")
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=\(partialSize)-")
        #expect(requests.last?.responseStatus == 206)
        #expect(requests.last?.bodyBytesSent == Self.size - partialSize)
        try await server.shutdown()
    }

    @Test("a signal after the last download ended cuts the display's wind-down short: exit 0, summary printed")
    func signalDuringWindDown() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        // The indicator shows at once and would stay for 30 s after the download.
        let process = try ActivityCounterProcess([
            "fetch", server.url("/delay/200").absoluteString, "--output-dir", scratch.path("out"), "--events",
            "--activation-delay", "0", "--completion-delay", "30",
        ])
        try await process.waitForStdout { $0.contains("herald.task.complete") }
        try await process.waitForStderr { $0.contains("activity: shown") }
        let signalled = ContinuousClock.now
        process.send(SIGINT)
        let run = try await process.finish(timeout: .seconds(20))
        let afterSignal = ContinuousClock.now - signalled
        try await server.shutdown()
        // Before, the signal was ignored here and the run sat out the 30 s.
        #expect(afterSignal < .seconds(10))
        // Every download had its outcome: saved, and the run says so.
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(!run.stdout.contains("interrupted"), "\(run.stdout)")
        #expect(try scratch.files(in: "out") == ["200"])
    }

    @Test("a second signal right after the first never skips the cleanup: summary printed, nothing left behind")
    func secondSignal() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let process = try await startMidDownload(server, scratch: scratch)
        process.send(SIGINT)
        process.send(SIGTERM)
        process.send(SIGINT)
        let run = try await process.finish(timeout: .seconds(10))
        try await server.shutdown()
        // Whichever of the two the process took first decides the status; the other changes nothing.
        #expect(run.status == 130 || run.status == 143, "stderr: \(run.stderr)")
        #expect(
            run.stdout.contains("interrupted by SIGINT") || run.stdout.contains("terminated by SIGTERM"),
            "\(run.stdout)")
        #expect(try scratch.files(in: "out") == ["json"])
        #expect(try scratch.files(in: "tmp") == [])
    }
}
