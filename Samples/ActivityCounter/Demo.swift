import ArgumentParser
import Foundation
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
        let server = try await TestServer.start()
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
