import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import HeraldTesting

/// `activity-counter demo`: the same flow against an embedded loopback server.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run against an embedded loopback server serving assorted sizes and delays (the default).",
        discussion: """
            One URL answers 404 on purpose, to show a failure in the summary; the demo exits 0 when every \
            URL behaved as planned.

            Examples:
              activity-counter demo
              activity-counter demo --events --activation-delay 0 | jq -c '{event, url, status}'
            """)

    @OptionGroup var options: RunOptions

    /// Anything else on the command line: a URL given without `fetch` lands here, to be refused with a hint
    /// (and its credentials redacted) rather than echoed back by the parser's own error.
    @Argument(parsing: .allUnrecognized, help: .hidden) var unexpected: [String] = []

    func validate() throws {
        guard let first = unexpected.first else { return }
        throw ValidationError(
            "demo takes no URL or argument (\(Fetch.quoted(first))); to download URLs, run "
                + "'activity-counter fetch URL…'.")
    }

    /// The demo's URLs: sizes from a few bytes to 8 MiB, slow streams, delays, a redirect and a 404.
    static let paths: [(path: String, expectedStatus: Int)] = [
        ("/json", 200),
        ("/bytes/1048576", 200),
        ("/bytes/8388608?chunkSize=65536&delayMs=12", 200),
        ("/bytes/2097152?chunked=1&chunkSize=32768&delayMs=15", 200),
        ("/delay/300", 200),
        ("/delay/1500", 200),
        ("/redirect/2", 200),
        ("/status/404", 404),
    ]

    func run() async throws {
        // The embedded server is on loopback: reached directly, whatever proxy the environment names (libcurl
        // would send even 127.0.0.1 through `http_proxy`).
        setenv("no_proxy", "127.0.0.1,::1,localhost", 1)
        setenv("NO_PROXY", "127.0.0.1,::1,localhost", 1)
        let server: TestServer
        do {
            server = try await TestServer.start()
        } catch {
            Console(quiet: options.quiet).error("the demo's embedded server could not start: \(error)")
            throw ExitCode(ExitStatus.unavailable.rawValue)
        }
        let targets = Self.paths.map { FetchTarget(url: server.url($0.path), expectedStatus: $0.expectedStatus) }
        let outcome: FetchRun.Outcome
        do {
            outcome = try await FetchRun(targets: targets, options: options, transfer: TransferOptions.parse([])).run()
        } catch {
            try? await server.shutdown()
            throw error
        }
        try? await server.shutdown()
        if outcome.exitStatus != .success { throw ExitCode(outcome.exitStatus.rawValue) }
    }
}
