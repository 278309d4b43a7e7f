import Foundation
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `custom-observer` sample's own checks of what it is given, what it prints and how it exits.
@Suite("custom-observer: arguments, output, exit status")
struct CustomObserverSampleTests {
    /// Runs `custom-observer arguments…` (built beside this test bundle); with `shell`, through `bash -c shell`,
    /// in which `"$0" "$@"` is the command.
    private func run(_ arguments: [String], shell: String? = nil) async throws -> ActivityCounterProcess.Run {
        try await ActivityCounterProcess.run(arguments, shell: shell, executable: "custom-observer")
    }

    @Test("a URL the session can't use (no scheme, another scheme) is a usage error, exit 64, not a crash")
    func unusableURL() async throws {
        for url in ["127.0.0.1/x", "ftp://127.0.0.1/x", "http://"] {
            let result = try await run([url])
            #expect(result.status == 64, "\(url): \(result.stderr)")
            #expect(result.stderr.hasPrefix("usage: custom-observer"), "\(url): \(result.stderr)")
        }
    }

    @Test("without URLs it reaches its own loopback server directly, whatever proxy the environment names")
    func ownServerIgnoresEnvironmentProxy() async throws {
        // Port 9 on loopback: a proxy that refuses every connection. Through it, every request would fail.
        let result = try await ActivityCounterProcess.run(
            [], environment: ["http_proxy": "http://127.0.0.1:9", "all_proxy": "http://127.0.0.1:9"],
            executable: "custom-observer")
        #expect(result.status == 0, "stdout: \(result.stdout) stderr: \(result.stderr)")
    }

    @Test(
        "a closed or full stderr loses the usage line, never the process: exit 64",
        arguments: [#""$0" "$@" 2>/dev/full"#, #""$0" "$@" 2>&-"#])
    func unwritableStderr(shell: String) async throws {
        let result = try await run(["ftp://127.0.0.1/x"], shell: shell)
        #expect(result.status == 64, "\(result.stderr)")
    }

    @Test("a full stdout loses the report: said on stderr, exit 74, never 0")
    func fullStdout() async throws {
        let server = try await TestServer.start()
        let result = try await run([server.url("/text").absoluteString], shell: #""$0" "$@" >/dev/full"#)
        try await server.shutdown()
        #expect(result.status == 74, "\(result.stderr)")
        #expect(result.stderr.contains("cannot write the report"), "\(result.stderr)")
    }

    @Test("a reader that has gone (a closed pipe) loses the report: exit 74, not killed by SIGPIPE")
    func closedPipe() async throws {
        let server = try await TestServer.start()
        // `true` exits without reading. The test process ignores SIGPIPE and children inherit that: `env
        // --default-signal` gives the sample the default action, as from a shell.
        let result = try await run(
            [server.url("/text").absoluteString, server.url("/json").absoluteString],
            shell: #"env --default-signal=PIPE "$0" "$@" | true; exit "${PIPESTATUS[0]}""#)
        try await server.shutdown()
        // Before, the first write killed it: 141.
        #expect(result.status == 74, "\(result.stderr)")
    }

    @Test("a closed stdout takes no descriptor's place: the report is lost, the requests are not")
    func closedStdout() async throws {
        let server = try await TestServer.start()
        let result = try await run([server.url("/text").absoluteString], shell: #""$0" "$@" >&-"#)
        try await server.shutdown()
        // /dev/null stood in: writes to it succeed.
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests(forPath: "/text").count == 1)
    }

    @Test("a request that fails or answers outside 2xx makes the exit status 1; every 2xx is 0")
    func failuresExitNonZero() async throws {
        let server = try await TestServer.start()
        let failing = try await run([server.url("/text").absoluteString, server.url("/status/500").absoluteString])
        let passing = try await run([server.url("/text").absoluteString])
        try await server.shutdown()
        #expect(failing.status == 1, "stdout: \(failing.stdout) stderr: \(failing.stderr)")
        #expect(failing.stdout.contains("/status/500: 500"), "\(failing.stdout)")
        #expect(failing.stdout.contains("failed: 1"), "\(failing.stdout)")
        #expect(passing.status == 0, "stdout: \(passing.stdout) stderr: \(passing.stderr)")
        #expect(!passing.stdout.contains("failed"), "\(passing.stdout)")
    }

    @Test(
        "a signal cancels the requests still running: the report printed, exit 128 + the signal, at once",
        arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143)), (SIGHUP, Int32(129))])
    func signalCancels(signal: Int32, status: Int32) async throws {
        let server = try await TestServer.start()
        let slow = server.url("/delay/60000").absoluteString
        let process = try ActivityCounterProcess(
            [server.url("/text").absoluteString, slow], executable: "custom-observer")
        // Both requests reached the server; the fast one is answered, the slow one would take a minute.
        try await server.waitUntil(timeout: .seconds(30)) { $0.requests.count >= 2 }
        let signalled = ContinuousClock.now
        process.send(signal)
        let run = try await process.finish(timeout: .seconds(20))
        let afterSignal = ContinuousClock.now - signalled
        try await server.shutdown()
        #expect(run.status == status, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(afterSignal < .seconds(10))
        #expect(run.stdout.contains("/delay/60000: - cancelled"), "\(run.stdout)")
        #expect(run.stdout.contains("completed: 2"), "\(run.stdout)")
        #expect(run.stderr.contains("stopped by"), "\(run.stderr)")
    }

    @Test("URLs are printed without their password, the slow-request line too")
    func credentialsRedacted() async throws {
        let server = try await TestServer.start()
        var components = try #require(URLComponents(url: server.url("/delay/400"), resolvingAgainstBaseURL: false))
        components.user = "alice"
        components.password = "s3cretPW9"
        let url = try #require(components.url)
        let result = try await run([url.absoluteString])
        try await server.shutdown()
        #expect(result.status == 0, "stdout: \(result.stdout) stderr: \(result.stderr)")
        #expect(result.stdout.contains("slow: "), "\(result.stdout)")
        #expect(result.stdout.contains("/delay/400: 200"), "\(result.stdout)")
        #expect(!result.stdout.contains("s3cretPW9") && !result.stderr.contains("s3cretPW9"), "\(result.stdout)")
    }
}
