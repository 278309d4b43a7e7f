import Foundation
import Herald
import HeraldTesting
import Testing

/// What a person sees on a terminal: stderr is a pseudo-terminal (`script` makes one), so the progress line
/// is animated, and the notes written while it is drawn must each get a line of their own.
@Suite("activity-counter on a terminal", .serialized)
struct TerminalOutputTests {
    /// Runs the command through `script`, whose pseudo-terminal becomes the child's stdin, stdout and stderr.
    private static let inTerminal = #"exec script -qfec "$(printf '%q ' "$0" "$@")" /dev/null"#

    /// What a terminal shows of each line `output` writes (the terminal's CR LF read as a line's end): the text
    /// after the line's last carriage return, from which the erase sequence is dropped.
    private static func shownLines(_ output: String) -> [String] {
        output.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in
                let shown = line.split(separator: "\r", omittingEmptySubsequences: false).last ?? line
                return shown.replacingOccurrences(of: "\u{1B}[2K", with: "")
            }
    }

    @Test("retry notes written while the progress line is drawn land on lines of their own, not on its end")
    func notesDoNotJoinTheProgressLine() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TestServer.start()
        // The slow download keeps the animated line drawn while the other one's attempts fail and are retried.
        let run = try await ActivityCounterProcess.run(
            [
                "fetch", server.url("/delay/2500").absoluteString,
                server.url("/flaky?key=terminal&fail=3&status=503").absoluteString, "--retry", "3", "--retry-delay",
                "0.4", "--activation-delay", "0", "--output-dir", scratch.path("out"),
            ], environment: ["TERM": "xterm"], shell: Self.inTerminal)
        try await server.shutdown()
        #expect(run.status == 0, "output: \(run.stdout.debugDescription)")
        let lines = Self.shownLines(run.stdout)
        let notes = lines.filter { $0.contains("retrying") }
        #expect(notes.count == 3, "output: \(run.stdout.debugDescription)")
        // A note starts its line: the spinner or the counts before it would be the progress line's end.
        for note in notes {
            #expect(note.hasPrefix("retrying"), "\(note.debugDescription)")
        }
        // The progress line was drawn: the run is animated on a terminal.
        #expect(run.stdout.contains("1 active"), "output: \(run.stdout.debugDescription)")
    }
}
