import Foundation
import HeraldTesting
import Testing

@testable import ActivityCounter

#if canImport(Glibc)
    import Glibc
#endif

/// The CLI on a machine it shares, with streams that close or fill, and with input people really have: each
/// test is one defect a probe found.
@Suite("activity-counter: closed streams, shared machines, odd input", .serialized)
struct SharedMachineCLITests {
    /// A download paced over about a second, so the display has something to say while it runs.
    static let pacedPath = "/bytes/300000?chunkSize=16384&delayMs=40"

    @Test(
        "a closed, full or abandoned stderr never stops the download: the file is saved, exit 0",
        arguments: [
            #""$0" "$@" 2>&-"#, #""$0" "$@" 2>/dev/full"#,
            #""$0" "$@" 2>&1 >/dev/null | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}"#,
        ])
    func brokenStderr(shell: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            [
                "fetch", server.url(Self.pacedPath).absoluteString, "--output-dir", scratch.path("out"),
                "--activation-delay", "0",
            ],
            shell: shell)
        try await server.shutdown()
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(try scratch.files(in: "out") == ["300000"])
        #expect(try scratch.contents("out/300000") == Data(TestServer.expectedBytes(in: 0..<300_000)))
    }

    @Test(
        "--events on a stdout that can't be written is an error in the exit status; the file is still saved",
        arguments: [#""$0" "$@" >/dev/full"#, #""$0" "$@" >&-"#])
    func unwritableEvents(shell: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/5000").absoluteString, "--output-dir", scratch.path("out"), "--events"],
            shell: shell)
        try await server.shutdown()
        #expect(run.status == 73, "stderr: \(run.stderr)")
        // Closed: seen as closed (the descriptor was filled with /dev/null before anything could take it).
        let reason = shell.hasSuffix(">&-") ? "Bad file descriptor" : "No space left on device"
        #expect(run.stderr.contains("--events: stdout could not be written (\(reason))"), "\(run.stderr)")
        #expect(try scratch.files(in: "out") == ["5000"])
    }

    @Test("a closed stdin is said to be closed for --input-file -, never read as a descriptor libdispatch opened")
    func closedStdin() async throws {
        let run = try await ActivityCounterProcess.run(["fetch", "--input-file", "-"], shell: #""$0" "$@" 0<&-"#)
        #expect(run.status == 64)
        #expect(run.stderr.contains("--input-file - can't be read: Bad file descriptor."), "\(run.stderr)")
    }

    @Test("a closed stdout without --events is no failure: the file is saved, exit 0")
    func closedStdoutWithoutEvents() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/5000").absoluteString, "--output-dir", scratch.path("out")],
            shell: #""$0" "$@" >&-"#)
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try scratch.files(in: "out") == ["5000"])
    }

    @Test("a full stdout loses the summary table: a local file error in the exit status; the file is still saved")
    func fullStdoutLosesSummary() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/5000").absoluteString, "--output-dir", scratch.path("out")],
            shell: #""$0" "$@" >/dev/full"#)
        try await server.shutdown()
        #expect(run.status == 73, "stderr: \(run.stderr)")
        #expect(
            run.stderr.contains("the summary could not be written to stdout (No space left on device)"),
            "\(run.stderr)")
        #expect(try scratch.files(in: "out") == ["5000"])
    }

    @Test("a reader that stops early (| head) is no failure: exit 0")
    func abandonedStdoutIsNoFailure() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/5000").absoluteString, "--output-dir", scratch.path("out")],
            shell: #""$0" "$@" | head -c 0; exit ${PIPESTATUS[0]}"#)
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try scratch.files(in: "out") == ["5000"])
    }

    @Test("--input-file lines end with LF, CRLF or a lone CR: each is its own URL")
    func inputFileLineEndings() async throws {
        let server = try await TestServer.start()
        let urls = ["/bytes/10", "/bytes/20", "/bytes/30", "/bytes/40"].map { server.url($0).absoluteString }
        let text = "\(urls[0])\r\n# a comment\r\n\(urls[1])\r\(urls[2])\n\r\n\(urls[3])\r\n"
        let run = try await ActivityCounterProcess.run(["fetch", "--input-file", "-"], stdin: Data(text.utf8))
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout.contains("4 URLs"), "\(run.stdout)")
        #expect(server.requestCount == 4)
    }

    @Test("--input-file reads a pipe (-i <(…)) once, to its end")
    func inputFileFromPipe() async throws {
        let server = try await TestServer.start()
        let urls = ["/bytes/10", "/bytes/20"].map { server.url($0).absoluteString }
        let run = try await ActivityCounterProcess.run(
            ["fetch"], environment: ["URL_LIST": urls.joined(separator: "\n")],
            shell: #""$0" "$@" --input-file <(printf '%s\n' "$URL_LIST")"#)
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout.contains("2 URLs"), "\(run.stdout)")
        #expect(server.requestCount == 2)
    }

    @Test(
        "an --input-file that can't be read says why, exit 64",
        arguments: [("/nonexistent/urls.txt", "No such file or directory"), ("/", "Is a directory")])
    func unreadableInputFile(path: String, reason: String) async throws {
        let run = try await ActivityCounterProcess.run(["fetch", "--input-file", path])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--input-file \(path) can't be read: \(reason)."), "\(run.stderr)")
    }

    @Test("a URL that does not parse is quoted without its password")
    func unparsableURLRedacted() async throws {
        let run = try await ActivityCounterProcess.run(["fetch", "http://user:s3cretPW9@[::1/"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("***:***@[::1/"), "\(run.stderr)")
        #expect(!run.stderr.contains("s3cretPW9"))
    }

    @Test("--user-agent with CR or LF is refused like -H", arguments: ["ua\r\nX-Injected: yes", "ua\nx", "ua\rx"])
    func userAgentLineBreak(value: String) async throws {
        let run = try await ActivityCounterProcess.run(["fetch", "http://127.0.0.1:1/", "--user-agent", value])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--user-agent"))
    }

    @Test("a bad chunk size is a malformed response, never retried")
    func badChunking() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/fault/bad-chunked").absoluteString, "--retry", "2", "--retry-delay", "0",
        ])
        try await server.shutdown()
        #expect(run.status == 2)
        #expect(run.stdout.contains("malformed server response"), "\(run.stdout)")
        #expect(!run.stdout.contains("connection lost"))
        #expect(server.requests(forPath: "/fault/bad-chunked").count == 1)
    }

    @Test("a reset while the body arrives is reported as such, never as a failure to send")
    func resetMidBody() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/fault/reset-mid-body?bytes=65536").absoluteString, "-v",
        ])
        try await server.shutdown()
        #expect(run.status == 2)
        #expect(run.stdout.contains("connection lost"), "\(run.stdout)")
        #expect(!(run.stdout + run.stderr).contains("sending"), "\(run.stderr)")
    }

    @Test(
        "the mirror recipe run twice fetches nothing again: each URL's own file is skipped, whatever named it")
    func mirrorIsIdempotent() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let paths = [
            "/bytes/1000", "/bytes/2000",
            // Two URLs that suggest the same name: the second is saved as 100-2, never skipped as "already there".
            "/bytes/100?key=a", "/bytes/100?key=b",
            // Named by Content-Disposition, and by the redirect's target: neither is the URL's last component.
            "/headers?Content-Disposition=attachment;%20filename%3Dreport.pdf", "/redirect-to?url=/bytes/300",
        ]
        let arguments =
            ["fetch"] + paths.map { server.url($0).absoluteString } + [
                "--continue", "--output-dir", scratch.path("mirror"),
            ]
        let first = try await ActivityCounterProcess.run(arguments)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let expected = [SavedFileIndex.fileName, "100", "100-2", "1000", "2000", "300", "report.pdf"]
        #expect(try scratch.files(in: "mirror") == expected)
        let requestsAfterFirst = server.requestCount
        #expect(requestsAfterFirst == 7)

        let second = try await ActivityCounterProcess.run(arguments)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(try scratch.files(in: "mirror") == expected)
        #expect(server.requestCount == requestsAfterFirst)
        #expect(second.stdout.components(separatedBy: "already there").count - 1 == paths.count, "\(second.stdout)")

        // A file removed since is fetched again, under its name; the others are still skipped.
        try FileManager.default.removeItem(atPath: scratch.path("mirror/100-2"))
        let third = try await ActivityCounterProcess.run(arguments)
        try await server.shutdown()
        #expect(third.status == 0, "stderr: \(third.stderr)")
        #expect(try scratch.files(in: "mirror") == expected)
        #expect(server.requests(forPath: "/bytes/100").count == 3)
        #expect(server.requestCount == requestsAfterFirst + 1)
    }

    @Test("a saved file replaced since, or changed in place, is no reason to skip its URL: it is fetched again")
    func replacedFileIsNotSkipped() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let mirror = scratch.path("mirror")
        let first = server.url("/bytes/100?key=a").absoluteString
        let continueFirst = ["fetch", first, "--continue", "--output-dir", mirror]
        #expect(try await ActivityCounterProcess.run(continueFirst).status == 0)
        // Another URL's download, without --continue, replaces the file under the same name. Before, the next
        // --continue run took it for the first URL's and skipped that URL: "already there", with the wrong bytes.
        let other = server.url("/bytes/100?key=b").absoluteString
        #expect(
            try await ActivityCounterProcess.run(["fetch", other, "--overwrite", "--output-dir", mirror]).status == 0)
        let afterReplace = try await ActivityCounterProcess.run(continueFirst)
        #expect(afterReplace.status == 0, "stderr: \(afterReplace.stderr)")
        #expect(!afterReplace.stdout.contains("already there"), "\(afterReplace.stdout)")
        #expect(server.requests(forPath: "/bytes/100").count == 3)
        // Saved again, and unchanged: skipped.
        let unchanged = try await ActivityCounterProcess.run(continueFirst)
        #expect(unchanged.stdout.contains("already there"), "\(unchanged.stdout)")
        #expect(server.requests(forPath: "/bytes/100").count == 3)
        // Changed in place (the same inode, another size and time): fetched again. The first URL's file is
        // `100-2` now: its fetch after the replacement found `100` taken by the other URL's.
        #expect(try scratch.files(in: "mirror") == [SavedFileIndex.fileName, "100", "100-2"])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch.path("mirror/100-2")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("appended".utf8))
        try handle.close()
        let changed = try await ActivityCounterProcess.run(continueFirst)
        try await server.shutdown()
        #expect(!changed.stdout.contains("already there"), "\(changed.stdout)")
        #expect(server.requests(forPath: "/bytes/100").count == 4)
    }

    @Test("a file named like another URL's is fetched, never skipped: the first run without an index skips nothing")
    func sameNameIsNotSkipped() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        try FileManager.default.createDirectory(atPath: scratch.path("mirror"), withIntermediateDirectories: true)
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: scratch.path("mirror/100")))
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/bytes/100").absoluteString, "--continue", "--output-dir", scratch.path("mirror"),
        ])
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(!run.stdout.contains("already there"), "\(run.stdout)")
        #expect(try scratch.contents("mirror/100") == Data("someone else's".utf8))
        #expect(try scratch.contents("mirror/100-2") == Data(TestServer.expectedBytes(in: 0..<100)))
    }

    @Test(
        "a damaged --continue index skips nothing and is written again",
        arguments: ["", "{\"files\": 3}", "\u{0}garbage"])
    func damagedIndex(contents: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let arguments = [
            "fetch", server.url("/bytes/100").absoluteString, "--continue", "--output-dir", scratch.path("mirror"),
        ]
        let first = try await ActivityCounterProcess.run(arguments)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let index = URL(fileURLWithPath: scratch.path("mirror/\(SavedFileIndex.fileName)"))
        try Data(contents.utf8).write(to: index)
        let second = try await ActivityCounterProcess.run(arguments)
        let third = try await ActivityCounterProcess.run(arguments)
        try await server.shutdown()
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(!second.stdout.contains("already there"), "\(second.stdout)")
        #expect(third.stdout.contains("already there"), "\(third.stdout)")
        #expect(server.requestCount == 2)
        #expect(try scratch.files(in: "mirror") == [SavedFileIndex.fileName, "100", "100-2"])
    }

    @Test("a URL given twice is fetched once, and with --continue resumed once from its partial file")
    func duplicateURL() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        // The first request is cut short after 30000 bytes: --continue keeps them.
        let url = server.url("/bytes/100000?key=duplicate&dropAfter=30000").absoluteString
        let arguments = ["--continue", "--output-dir", scratch.path("out")]
        let first = try await ActivityCounterProcess.run(["fetch", url] + arguments)
        #expect(first.status == 2, "stdout: \(first.stdout) stderr: \(first.stderr)")
        #expect(try scratch.files(in: "out/" + ResumeStore.folderName).contains { $0.hasSuffix(".part") })

        let second = try await ActivityCounterProcess.run(["fetch", url, url] + arguments)
        try await server.shutdown()
        #expect(second.status == 0, "stdout: \(second.stdout) stderr: \(second.stderr)")
        #expect(second.stderr.contains("is given more than once: fetched once."), "\(second.stderr)")
        #expect(second.stdout.contains("1 URL"), "\(second.stdout)")
        #expect(try scratch.files(in: "out") == [SavedFileIndex.fileName, "100000"])
        #expect(try scratch.contents("out/100000") == Data(TestServer.expectedBytes(in: 0..<100_000)))
        let requests = server.requests(forPath: "/bytes/100000")
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=30000-")
    }

    @Test("saved files get 0666 & ~umask, as a new file would", arguments: [(0o022, 0o644), (0o027, 0o640)])
    func fileModeFollowsUmask(mask: Int, expected: Int) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/100").absoluteString, "--output-dir", scratch.path("out")],
            shell: "umask \(String(mask, radix: 8)); exec \"$0\" \"$@\"")
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        var status = stat()
        #expect(stat(scratch.path("out/100"), &status) == 0)
        #expect(Int(status.st_mode & 0o777) == expected)
    }

    @Test(
        "temporary files go in the output folder: a download larger than a small $TMPDIR succeeds",
        .enabled(
            if: geteuid() == 0 && OwnNamespace.spawnAndWait(["/usr/bin/unshare", "--mount", "true"]) == 0,
            "mounts a 1 MiB tmpfs: needs root with the privilege to mount (CI runs as root)"))
    func largerThanTemporaryDirectory() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let small = scratch.path("tmp")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        guard mount("tmpfs", small, "tmpfs", 0, "size=1m,mode=1777") == 0 else {
            Issue.record("mounting a tmpfs failed: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(small, Int32(MNT_DETACH)) }
        let server = try await TestServer.start()
        let size = 3 << 20
        let run = try await ActivityCounterProcess.run(
            ["fetch", server.url("/bytes/\(size)").absoluteString, "--output-dir", scratch.path("out")],
            environment: ["TMPDIR": small])
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try scratch.files(in: "out") == ["\(size)"])
        #expect(try scratch.contents("out/\(size)") == Data(TestServer.expectedBytes(in: 0..<size)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: small) == [])
    }

    @Test(
        "a file's line on a terminal shows its percentage and the time left",
        arguments: [
            (Int64(0), Int64(1000), 0.0, "0%"), (Int64(450), Int64(1000), 0.2, "45%"),
            (Int64(450), Int64(1000), 9.0, "45% ETA 0:11"), (Int64(1), Int64(1000), 1.0, "0% ETA 16:39"),
            (Int64(10), Int64(10_000), 100.0, "0% ETA 27:45:00"), (Int64(1000), Int64(1000), 3.0, "100% ETA 0:00"),
        ])
    func fileProgress(received: Int64, total: Int64, seconds: Double, expected: String) {
        #expect(ActivityDisplay.fileProgress(received: received, total: total, seconds: seconds) == expected)
    }

    @Test("a resumed download's partial file counts in its percentage, not in the bytes, the rate or the time left")
    func resumedProgress() {
        // 500 bytes were there; 100 arrived in a second: 400 left at 100 B/s.
        #expect(
            ActivityDisplay.fileProgress(received: 600, total: 1000, seconds: 1, resumedFrom: 500) == "60% ETA 0:04")
        let display = ActivityDisplay(enabled: true, environment: ["TERM": "dumb"])
        display.progress(0, bytes: 600, total: 1000, resumedFrom: 500)
        let line = display.progressLine()
        #expect(line.hasPrefix("0 active, \(ByteFormat.string(100)),"), "\(line)")
    }

    @Test("a retry that continues the file where the last attempt stopped adds its bytes to the last attempt's")
    func retriedProgress() {
        let display = ActivityDisplay(enabled: true, environment: ["TERM": "dumb"])
        // The first attempt gets 1,900 bytes and fails; the retry continues from byte 1,900.
        display.progress(0, bytes: 1_900, total: 2_000)
        display.progress(0, bytes: 1_950, total: 2_000, resumedFrom: 1_900)
        // Stuck at 1,900 before: the retry's 50 bytes were taken for fewer than the first attempt's.
        #expect(display.progressLine().hasPrefix("0 active, \(ByteFormat.string(1_950)),"))
        display.progress(0, bytes: 2_000, total: 2_000, resumedFrom: 1_900)
        #expect(display.progressLine().hasPrefix("0 active, \(ByteFormat.string(2_000)),"))
    }

    @Test("a download whose attempt ended leaves the files shown, its bytes still counted; its retry comes back")
    func endedAttemptLeavesTheLine() {
        let display = ActivityDisplay(enabled: true, environment: ["TERM": "dumb"])
        display.progress(0, bytes: 400, total: 1_000)
        display.progress(1, bytes: 100, total: 1_000)
        #expect(display.unfinishedFiles().count == 2)
        // Download 0 failed at 40%: before, it stayed on the line for the rest of the run, its time left growing.
        display.attemptEnded(0)
        #expect(display.unfinishedFiles().count == 1)
        #expect(display.unfinishedFiles().first?.hasPrefix("10%") == true)
        #expect(display.progressLine().hasPrefix("0 active, \(ByteFormat.string(500)),"))
        // Its retry's first progress shows it again.
        display.progress(0, bytes: 450, total: 1_000, resumedFrom: 400)
        #expect(display.unfinishedFiles().first?.hasPrefix("45%") == true)
    }

    @Test("a retry that starts the file over adds its bytes to the last attempt's")
    func restartedProgress() {
        let display = ActivityDisplay(enabled: true, environment: ["TERM": "dumb"])
        // The first attempt gets 500 bytes and fails; the server named no validator, so the retry starts over.
        display.progress(0, bytes: 500)
        display.progress(0, bytes: 100)
        // Stuck at 500 before, until the retry passed the first attempt's bytes.
        #expect(display.progressLine().hasPrefix("0 active, \(ByteFormat.string(600)),"), "\(display.progressLine())")
        display.progress(0, bytes: 700)
        #expect(display.progressLine().hasPrefix("0 active, \(ByteFormat.string(1_200)),"))
    }

    @Test(
        "the status line is cut to the terminal's width, never wrapped",
        arguments: [
            ("0 active, 1.0 MiB, 2.0 KiB/s", Int?(nil), "0 active, 1.0 MiB, 2.0 KiB/s"),
            ("0 active, 1.0 MiB, 2.0 KiB/s", 40, "0 active, 1.0 MiB, 2.0 KiB/s"),
            ("0 active, 1.0 MiB, 2.0 KiB/s", 12, "0 active, …"), ("abc", 1, "…"),
        ])
    func fittedLine(line: String, columns: Int?, expected: String) {
        let fitted = ActivityDisplay.fitted(line, columns: columns)
        #expect(fitted == expected)
        if let columns { #expect(fitted.count < max(columns, 2)) }
    }
}
