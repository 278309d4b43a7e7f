import ArgumentParser
import Logging

/// The options `fetch` and `demo` share.
struct RunOptions: ParsableArguments {
    @Option(name: .long, help: "How many transfers run at once (1-256).")
    var concurrency = 4

    @Option(name: .long, help: "Save each download into this directory (default: discard the bytes).")
    var outputDir: String?

    @Option(name: .long, help: "Seconds transfers must run before the indicator shows.")
    var activationDelay = 1.0

    @Option(name: .long, help: "Seconds the indicator stays after the last transfer ends.")
    var completionDelay = 0.17

    @Flag(name: .long, help: "Print the JSON-lines event log on stdout instead of the summary table.")
    var events = false

    @Option(name: .long, help: "Log Herald's lifecycle on stderr at this level: trace, debug, info, …")
    var logLevel: Logger.Level = .warning

    mutating func validate() throws {
        guard (1...256).contains(concurrency) else {
            throw ValidationError("--concurrency must be between 1 and 256, not \(concurrency).")
        }
        guard activationDelay.isFinite, activationDelay >= 0, activationDelay <= 60 else {
            throw ValidationError("--activation-delay must be between 0 and 60 seconds.")
        }
        guard completionDelay.isFinite, completionDelay >= 0, completionDelay <= 60 else {
            throw ValidationError("--completion-delay must be between 0 and 60 seconds.")
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
