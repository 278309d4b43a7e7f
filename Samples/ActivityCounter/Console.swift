import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import HeraldObservers

/// The lines `activity-counter` writes for a person, on stderr: retries and warnings unless `--quiet`, errors
/// always. URLs are always redacted as in the log and the event log (credentials, then the
/// query items the log redacts).
struct Console: Sendable {
    let quiet: Bool
    /// The progress display the lines go through, so that on a terminal a line never lands on the end of the
    /// animated one; `nil` before there is one.
    var display: ActivityDisplay? = nil

    /// The URL as the user may see it: `http://***:***@host/…`.
    func redacted(_ url: URL) -> String {
        LogRedaction.default.redacting(url)
    }

    /// A notice (a retry, a kept file) shown unless `--quiet`.
    func note(_ line: String) {
        if !quiet { write(line) }
    }

    /// A warning shown unless `--quiet`.
    func warn(_ line: String) {
        if !quiet { write("warning: " + line) }
    }

    /// An error, always shown.
    func error(_ line: String) {
        write("activity-counter: " + line)
    }

    private func write(_ line: String) {
        if let display { return display.writeLine(line) }
        // A closed or full stderr loses the line, never the run.
        StandardStream.write(line + "\n", to: STDERR_FILENO)
    }
}
