import ArgumentParser
import Logging

/// The options `fetch` and `demo` share: what is shown, where files go.
struct RunOptions: ParsableArguments {
    @Option(name: .long, help: "How many transfers run at once, 1-256 (e.g. --concurrency 8).")
    var concurrency = 4

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Save each download into this directory, created if missing (e.g. --output-dir downloads). Without it "
                + "each download goes to a temporary file in $TMPDIR, counted, then deleted.", valueName: "directory"))
    var outputDir: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Replace files already in --output-dir instead of saving beside them as name-2.ext "
                + "(e.g. --overwrite --output-dir mirror)."))
    var overwrite = false

    @Option(name: .long, help: "Seconds transfers must run before the indicator shows (e.g. --activation-delay 0).")
    var activationDelay = 1.0

    @Option(name: .long, help: "Seconds the indicator stays after the last transfer ends (e.g. --completion-delay 0).")
    var completionDelay = 0.17

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Print the JSON-lines event log on stdout (every event, written before exit); the summary goes to "
                + "stderr (e.g. --events | jq -c .)."))
    var events = false

    @Option(
        name: .long,
        help: "Log Herald's lifecycle on stderr at this level: trace, debug, info… (e.g. --log-level debug).")
    var logLevel: Logger.Level = .warning

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "When no network reaches a server, say \"waiting for the network\" and wait for a route (up to "
                + "--max-time) instead of failing at once (e.g. --wait-for-network)."))
    var waitForNetwork = false

    @Flag(name: [.short, .long], help: "Print nothing but errors: no indicator, no summary (e.g. -q).")
    var quiet = false

    @Flag(
        name: [.short, .long], help: "Log Herald's lifecycle on stderr at debug level, as --log-level debug (e.g. -v).")
    var verbose = false

    /// The log level in effect: `--verbose` raises it to debug.
    var effectiveLogLevel: Logger.Level { verbose ? min(logLevel, .debug) : logLevel }

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
        // An empty path would quietly mean the current directory.
        if outputDir?.isEmpty == true {
            throw ValidationError("--output-dir needs a directory: give '.' for the current one.")
        }
        guard !(quiet && verbose) else { throw ValidationError("--quiet and --verbose can't be used together.") }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
