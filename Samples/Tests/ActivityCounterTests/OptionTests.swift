import Foundation
import Herald
import HeraldTesting
import Testing

/// Each curl/wget-style option against a loopback server the test starts.
@Suite("activity-counter: options", .serialized)
struct OptionTests {
    @Test("--timeout: a server that never answers fails as a timeout (exit 2) after the idle timeout")
    func idleTimeout() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/fault/stall").absoluteString, "--timeout", "0.5",
        ])
        try await server.shutdown()
        #expect(run.status == 2, "stderr: \(run.stderr)")
        #expect(run.stdout.contains("timed out"))
        #expect(run.duration < .seconds(20))
    }

    @Test("--max-time: a body still streaming when the time is up fails as a timeout, though bytes keep moving")
    func maxTime() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            // 1 KiB every 50 ms: never idle for --timeout's 5 s, finished only after 50 s.
            "fetch", server.url("/bytes/1024000?chunkSize=1024&delayMs=50").absoluteString, "--max-time", "1",
            "--timeout", "5",
        ])
        try await server.shutdown()
        #expect(run.status == 2, "stderr: \(run.stderr)")
        #expect(run.stdout.contains("timed out"))
        #expect(run.duration < .seconds(20))
    }

    @Test("--max-filesize: a body over the cap fails (exit 2) and nothing is saved; one under it is saved")
    func maxFilesize() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let over = try await ActivityCounterProcess.run([
            "fetch", server.url("/bytes/10485760?chunked=1").absoluteString, "--max-filesize", "64K",
            "--output-dir", scratch.path("out"),
        ])
        #expect(over.status == 2, "stderr: \(over.stderr)")
        #expect(over.stdout.contains("larger than --max-filesize (64.0 KiB)"))
        #expect(try scratch.files(in: "out") == [])
        // The transfer stopped early rather than fetching the whole 10 MiB.
        #expect(server.bodyBytesSent(forPath: "/bytes/10485760") < 10_485_760)
        let under = try await ActivityCounterProcess.run([
            "fetch", server.url("/bytes/1000").absoluteString, "--max-filesize", "1K", "--output-dir",
            scratch.path("out"),
        ])
        #expect(under.status == 0, "stderr: \(under.stderr)")
        #expect(try scratch.files(in: "out") == ["1000"])
        // With --overwrite, a body over the cap that ends before a progress report stops it (2,000 bytes on
        // loopback, in one read, no length declared) never takes the name of a file already there: the file stays as it was.
        let existing = URL(fileURLWithPath: scratch.path("out")).appendingPathComponent("2000")
        try Data("kept".utf8).write(to: existing)
        let replacing = try await ActivityCounterProcess.run([
            "fetch", server.url("/bytes/2000?chunked=1").absoluteString, "--max-filesize", "1K", "--overwrite",
            "--output-dir",
            scratch.path("out"),
        ])
        try await server.shutdown()
        #expect(replacing.status == 2, "stderr: \(replacing.stderr)")
        #expect(try Data(contentsOf: existing) == Data("kept".utf8))
    }

    @Test("--retry: a reset, then a 503, then a 200: it succeeds on the third attempt")
    func retrySucceedsOnThirdAttempt() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await ScriptedServer.start([
            .reset, .respond(ScriptedServer.response(status: "503 Service Unavailable")),
            .respond(ScriptedServer.ok("third time lucky")),
        ])
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/flaky.txt").absoluteString, "--retry", "3", "--retry-delay", "0.05",
            "--output-dir", scratch.path("out"),
        ])
        let arrivals = server.arrivals
        try await server.shutdown()
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(arrivals.count == 3)
        #expect(try scratch.contents("out/flaky.txt") == Data("third time lucky".utf8))
        #expect(run.stdout.contains("after 3 attempts"))
        #expect(run.stderr.contains("retrying") && run.stderr.contains("HTTP 503 Service Unavailable"))
    }

    @Test("--retry: a file whose last chunk's end was lost is whole when the server answers 416 for the rest")
    func retryFindsTheFileWhole() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await ScriptedServer.start([
            // Every byte, then the connection closes before the chunked body's end.
            .respond(
                "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    + "a\r\n0123456789\r\n"),
            .respond(
                ScriptedServer.response(status: "416 Range Not Satisfiable", headers: ["Content-Range: bytes */10"])),
        ])
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/whole.txt").absoluteString, "--retry", "2", "--retry-delay", "0.05",
            "--output-dir", scratch.path("out"),
        ])
        let arrivals = server.arrivals
        try await server.shutdown()
        // Before, the 416 was taken for an error page: the whole file was deleted and the run exited 1.
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(arrivals.count == 2)
        #expect(try scratch.contents("out/whole.txt") == Data("0123456789".utf8))
    }

    @Test("--retry: a 404 is not transient, so it is not retried")
    func noRetryForNotFound() async throws {
        let server = try await ScriptedServer.start([
            .respond(ScriptedServer.response(status: "404 Not Found")), .respond(ScriptedServer.ok("never")),
        ])
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/missing").absoluteString, "--retry", "3", "--retry-delay", "0.05",
        ])
        let arrivals = server.arrivals
        try await server.shutdown()
        #expect(run.status == 1)
        #expect(arrivals.count == 1)
    }

    @Test("--retry: a 429 with Retry-After: 1 is tried again no sooner than a second later")
    func retryAfter() async throws {
        let server = try await ScriptedServer.start([
            .respond(ScriptedServer.response(status: "429 Too Many Requests", headers: ["Retry-After: 1"])),
            .respond(ScriptedServer.ok("ok")),
        ])
        let run = try await ActivityCounterProcess.run([
            // Without Retry-After the wait would be at most 0.01 s.
            "fetch", server.url("/limited").absoluteString, "--retry", "2", "--retry-delay", "0.01",
        ])
        let arrivals = server.arrivals
        try await server.shutdown()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        try #require(arrivals.count == 2)
        #expect(arrivals[1].time - arrivals[0].time >= .seconds(1))
        #expect(run.stderr.contains("in 1.0 s"))
    }

    @Test("-H and --user-agent are sent with every request")
    func headers() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/json").absoluteString, "-H", "X-Token: abc 123", "--header", "Accept: text/plain",
            "--user-agent", "mirror/1.0",
        ])
        try await server.shutdown()
        #expect(run.status == 0)
        let request = try #require(server.requests.first)
        #expect(request.headerValue("X-Token") == "abc 123")
        #expect(request.headerValue("Accept") == "text/plain")
        #expect(request.headerValue("User-Agent") == "mirror/1.0")
    }

    @Test("without --user-agent the User-Agent names activity-counter, Herald and libcurl")
    func defaultUserAgent() async throws {
        let server = try await TestServer.start()
        _ = try await ActivityCounterProcess.run(["fetch", server.url("/json").absoluteString])
        try await server.shutdown()
        let agent = try #require(server.requests.first?.headerValue("User-Agent"))
        #expect(agent == "activity-counter/\(HeraldVersion.string) \(HeraldVersion.userAgent)")
    }

    @Test("--input-file reads one URL a line, skipping blanks and # comments; - reads stdin")
    func inputFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let list = """
            # mirror list
            \(server.url("/bytes/10").absoluteString)

              \(server.url("/bytes/20").absoluteString)
            # \(server.url("/bytes/30").absoluteString)
            """
        try Data(list.utf8).write(to: scratch.url.appendingPathComponent("urls.txt"))
        let fromFile = try await ActivityCounterProcess.run([
            "fetch", "--input-file", scratch.path("urls.txt"), server.url("/bytes/40").absoluteString,
        ])
        #expect(fromFile.status == 0, "stderr: \(fromFile.stderr)")
        #expect(fromFile.stdout.contains("3 URLs"))
        let fromStdin = try await ActivityCounterProcess.run(["fetch", "-i", "-"], stdin: Data(list.utf8))
        #expect(fromStdin.status == 0)
        #expect(fromStdin.stdout.contains("2 URLs"))
        #expect(server.requests(forPath: "/bytes/30").isEmpty)
        #expect(server.requests(forPath: "/bytes/10").count == 2)
        let bad = try await ActivityCounterProcess.run(["fetch", "-i", "-"], stdin: Data("ftp://x/y\n".utf8))
        try await server.shutdown()
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("-:1"))
    }

    @Test("-i - with stdin closed, or a directory, is a usage error (exit 64) in one line, not a crash")
    func unreadableStdin() async throws {
        for redirect in ["<&-", "< /"] {
            let run = try await ActivityCounterProcess.run(
                ["fetch", "-i", "-"], shell: "\"$0\" \"$@\" \(redirect)")
            #expect(run.status == 64, "\(redirect): \(run.stderr)")
            #expect(run.stderr.contains("--input-file - can't be read"), "\(redirect): \(run.stderr)")
        }
    }

    @Test("--version prints Herald's version and the libcurl and libuv it runs on")
    func version() async throws {
        let run = try await ActivityCounterProcess.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("activity-counter \(HeraldVersion.string)\n"))
        #expect(run.stdout.contains("Herald \(HeraldVersion.string), libcurl \(LibraryVersions.curl)"))
        #expect(run.stdout.contains("libuv \(LibraryVersions.libuv)"))
    }

    @Test("-q prints nothing for a success and one line per failure; -v adds Herald's debug log")
    func quietAndVerbose() async throws {
        let server = try await TestServer.start()
        let quietSuccess = try await ActivityCounterProcess.run(["fetch", server.url("/json").absoluteString, "-q"])
        #expect(quietSuccess.status == 0)
        #expect(quietSuccess.stdout.isEmpty && quietSuccess.stderr.isEmpty)
        let quietFailure = try await ActivityCounterProcess.run([
            "fetch", server.url("/json").absoluteString, server.url("/status/404").absoluteString, "-q",
        ])
        #expect(quietFailure.status == 1)
        #expect(quietFailure.stdout.isEmpty)
        #expect(quietFailure.stderr.split(separator: "\n").count == 1)
        #expect(quietFailure.stderr.contains("/status/404: HTTP 404 Not Found"))
        let verbose = try await ActivityCounterProcess.run(["fetch", server.url("/json").absoluteString, "-v"])
        try await server.shutdown()
        #expect(verbose.status == 0)
        #expect(verbose.stderr.contains("task completed"))
        #expect(verbose.stderr.contains("session invalidated"))
    }

    @Test("--cacert with a missing file and a malformed --pin are usage errors; --insecure says loudly what it does")
    func tlsOptions() async throws {
        let missing = try await ActivityCounterProcess.run([
            "fetch", "https://127.0.0.1:1/", "--cacert", "/nonexistent/ca.pem",
        ])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("--cacert"))
        let badPin = try await ActivityCounterProcess.run(["fetch", "https://127.0.0.1:1/", "--pin", "md5//nope"])
        #expect(badPin.status == 64)
        let server = try await TestServer.start()
        let insecure = try await ActivityCounterProcess.run([
            "fetch", server.url("/json").absoluteString, "--insecure",
        ])
        try await server.shutdown()
        #expect(insecure.status == 0)
        #expect(insecure.stderr.contains("TLS certificates are NOT verified"))
    }

    @Test("an --output-dir that can't be used exits 73 with one line, before any request")
    func unusableOutputDirectory() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try Data("a file".utf8).write(to: scratch.url.appendingPathComponent("file"))
        let server = try await TestServer.start()
        for directory in [scratch.path("file"), scratch.path("file/sub")] {
            let run = try await ActivityCounterProcess.run([
                "fetch", server.url("/json").absoluteString, "--output-dir", directory,
            ])
            #expect(run.status == 73, "\(directory): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1)
            #expect(run.stderr.hasPrefix("activity-counter: --output-dir \(directory)"))
        }
        try await server.shutdown()
        #expect(server.requests.isEmpty)
    }

    @Test("a server that resets the connection fails as a network error (exit 2), in words")
    func networkError() async throws {
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/fault/reset-before-headers").absoluteString,
        ])
        try await server.shutdown()
        #expect(run.status == 2)
        #expect(run.stdout.contains("connection lost") || run.stdout.contains("malformed server response"))
    }
}
