import ArgumentParser
import Herald

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `activity-counter`: downloads URLs concurrently with Herald and shows the network activity indicator
/// while it works. Without arguments it runs ``Demo``. Started by ``EntryPoint``.
struct ActivityCounter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity-counter",
        abstract: "Download URLs concurrently and show Herald's network activity indicator.",
        discussion: """
            The indicator appears on stderr once transfers have run for the activation delay and goes away \
            the completion delay after the last one ends: an animated line on a terminal, plain lines \
            otherwise (NO_COLOR is honoured). A summary table follows on stdout, or with --events the \
            JSON-lines event log instead (the table then goes to stderr). URL credentials are redacted everywhere.

            Examples:
              activity-counter                      # the demo against an embedded loopback server
              activity-counter fetch https://example.com/big.iso --output-dir downloads --retry 3
              activity-counter fetch --help         # every download option, with an example each

            Exit status:
            \(ExitStatus.helpText)
            """,
        version: versionText,
        subcommands: [Fetch.self, Demo.self],
        defaultSubcommand: Demo.self
    )

    /// `--version`: this sample's and Herald's version, and the C libraries it runs on.
    static var versionText: String {
        let tls = LibraryVersions.curlTLS.map { " (\($0))" } ?? ""
        return """
            activity-counter \(HeraldVersion.string)
            Herald \(HeraldVersion.string), libcurl \(LibraryVersions.curl)\(tls), libuv \(LibraryVersions.libuv)
            """
    }
}

/// The process's entry point: the standard streams first, then the command.
@main
enum EntryPoint {
    static func main() async {
        // Before anything opens a descriptor: a closed stdin, stdout or stderr would hand its number to the
        // first file libdispatch or the run opens, and output meant for the terminal would go there.
        StandardStream.fillClosedDescriptors()
        // A reader that has gone (`activity-counter … | head -1`, a closed stderr) ends that output, not the
        // process: writes to the closed pipe fail with EPIPE, which every write here ignores, instead of killing
        // it with SIGPIPE. Before any write: the first warnings and usage errors are written early.
        signal(SIGPIPE, SIG_IGN)
        await ActivityCounter.main()
    }
}
