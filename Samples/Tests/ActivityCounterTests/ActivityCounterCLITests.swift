import Foundation
import HeraldObservers
import HeraldTesting
import Testing

@Suite("activity-counter CLI", .serialized)
struct ActivityCounterCLITests {
    @Test(
        "bad arguments exit 64 with a helpful message",
        arguments: [
            ["fetch"], ["fetch", "ftp://example.com/x"], ["fetch", "http://127.0.0.1:1/", "--concurrency", "0"],
            ["demo", "--activation-delay", "-1"], ["demo", "--log-level", "loud"], ["frobnicate"],
            ["fetch", "http://127.0.0.1:1/", "--continue"], ["fetch", "http://127.0.0.1:1/", "-H", "NoColon"],
            ["fetch", "http://127.0.0.1:1/", "--max-filesize", "lots"], ["fetch", "http://127.0.0.1:1/", "-q", "-v"],
            ["fetch", "http://127.0.0.1:1/", "--retry-delay", "121"],
            ["fetch", "http://127.0.0.1:1/", "--output-dir", ""],
            ["fetch", "http://127.0.0.1:99999/x"], ["fetch", "http://127.0.0.1:65536/x"],
        ])
    func badArguments(_ arguments: [String]) async throws {
        let run = try await ActivityCounterProcess.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.contains("Error:"))
        #expect(run.stderr.contains("Usage:") || run.stderr.contains("--help"))
    }

    @Test("a rejected URL is quoted without its credentials")
    func rejectedURLRedacted() async throws {
        let run = try await ActivityCounterProcess.run(["fetch", "ftp://bob:hunter2@127.0.0.1/x"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("127.0.0.1/x"))
        #expect(!run.stderr.contains("hunter2") && !run.stderr.contains("bob"))
    }

    @Test("a URL given without fetch is refused with a hint, its credentials never shown")
    func urlWithoutFetch() async throws {
        let run = try await ActivityCounterProcess.run(["http://alice:s3cret@127.0.0.1:9/file.iso"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("activity-counter fetch"), "stderr: \(run.stderr)")
        #expect(run.stderr.contains("127.0.0.1:9/file.iso"))
        #expect(!run.stderr.contains("s3cret") && !run.stderr.contains("alice"))
    }

    @Test("the demo reaches its loopback server directly, whatever proxy the environment names")
    func demoIgnoresEnvironmentProxy() async throws {
        // Port 9 on loopback: a proxy that refuses every connection. Through it, every URL would fail.
        let proxy = "http://127.0.0.1:9"
        let run = try await ActivityCounterProcess.run(
            ["demo"], environment: ["http_proxy": proxy, "all_proxy": proxy, "HTTPS_PROXY": proxy])
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("8 URLs, 11.0 MiB, all as expected"))
    }

    @Test("the demo runs end to end: summary on stdout, indicator lines on stderr, exit 0")
    func demo() async throws {
        let run = try await ActivityCounterProcess.run(["demo"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("URL") == true)
        #expect(lines.count == 8 + 2)
        #expect(run.stdout.contains("/status/404") && run.stdout.contains("404 (planned)"))
        #expect(run.stdout.contains("HTTP 404 Not Found"))
        #expect(lines.last == "8 URLs, 11.0 MiB, all as expected")
        // Not a terminal: plain lines, shown once and hidden once, no escape sequences.
        #expect(run.stderr.contains("activity: shown"))
        let indicatorLines = run.stderr.split(separator: "\n").filter {
            $0.hasPrefix("activity: shown") || $0.hasPrefix("activity: hidden")
        }
        #expect(indicatorLines.count == 2)
        #expect(indicatorLines.last?.hasPrefix("activity: hidden") == true)
        #expect(!run.stderr.contains("\u{1B}"))
    }

    @Test("--events prints JSON lines on stdout with a resume and a complete per URL")
    func events() async throws {
        let run = try await ActivityCounterProcess.run(["demo", "--events", "--activation-delay", "0"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let records = try run.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8))
        }
        let urls = Set(records.compactMap(\.url))
        #expect(urls.count == 8)
        for url in urls {
            let events = records.filter { $0.url == url }.map(\.event)
            #expect(events == ["herald.task.resume", "herald.task.complete"], "\(url)")
        }
        #expect(records.last?.event == "herald.session.invalidate")
        #expect(run.stderr.contains("8 URLs"))
    }

    @Test("fetch exits 1 when a URL answers 500, and saves the other into --output-dir under its own name")
    func fetchFailure() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        let run = try await ActivityCounterProcess.run([
            "fetch", server.url("/bytes/5000").absoluteString, server.url("/status/500").absoluteString,
            "--output-dir", scratch.path("out"),
        ])
        try await server.shutdown()
        #expect(run.status == 1)
        #expect(run.stdout.contains("HTTP 500 Internal Server Error"))
        #expect(run.stdout.contains("1 failed"))
        #expect(try scratch.files(in: "out") == ["5000"])
        #expect(try scratch.contents("out/5000") == Data(TestServer.expectedBytes(in: 0..<5000)))
        // The saved file's path is in the summary.
        #expect(run.stdout.contains(scratch.url.appendingPathComponent("out/5000").path))
    }

    @Test("a closed stdout (the reader has gone) ends the output, not the process", arguments: [false, true])
    func closedStdout(events: Bool) async throws {
        let binary = try #require(ActivityCounterProcess.binary)
        let server = try await TestServer.start()
        // `true` exits at once without reading: every write to stdout finds the pipe closed. The test process
        // ignores SIGPIPE and children inherit that: `env --default-signal` gives the CLI the default action, as
        // from a shell.
        let script =
            "env --default-signal=PIPE \"$0\" fetch \"$1\"\(events ? " --events" : "") | true; echo \"${PIPESTATUS[0]}\""
        let arguments = ["-c", script, binary.path, server.url("/bytes/1000").absoluteString]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingOldest(1))
        process.terminationHandler = { continuation.yield($0.terminationStatus) }
        try process.run()
        let status = try await withTimeout(.seconds(60), "bash did not exit") {
            for await status in exited { return status }
            return -1
        }
        try await server.shutdown()
        #expect(status == 0)
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // activity-counter's own status, not 141 (killed by SIGPIPE): 0, or with --events 73, the event log
        // having been lost with its reader.
        #expect(printed == (events ? "73\n" : "0\n"))
    }

    @Test("the summary never shows URL credentials; the error column is words, not codes")
    func redactedSummary() async throws {
        let server = try await TestServer.start()
        var components = try #require(URLComponents(url: server.url("/status/401"), resolvingAgainstBaseURL: false))
        components.user = "alice"
        components.password = "s3cret-pass"
        let url = try #require(components.url)
        let run = try await ActivityCounterProcess.run(["fetch", url.absoluteString, "-v"])
        try await server.shutdown()
        #expect(run.status == 1)
        #expect(!run.stdout.contains("s3cret-pass") && !run.stderr.contains("s3cret-pass"))
        #expect(!run.stdout.contains("alice") && !run.stderr.contains("alice"))
        #expect(run.stdout.contains("HTTP 401 Unauthorized"))
        #expect(!run.stdout.contains("unacceptable_status_code"))
    }
}
