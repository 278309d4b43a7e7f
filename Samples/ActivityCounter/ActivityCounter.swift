import ArgumentParser

/// `activity-counter`: downloads URLs concurrently with Herald and shows the network activity indicator
/// while it works. Without arguments it runs ``Demo``.
@main
struct ActivityCounter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity-counter",
        abstract: "Download URLs concurrently and show Herald's network activity indicator.",
        discussion: """
            The indicator appears on stderr once transfers have run for the activation delay and goes away \
            the completion delay after the last one ends: an animated line on a terminal, plain lines \
            otherwise (NO_COLOR is honoured). A summary table follows on stdout, or with --events the \
            JSON-lines event log instead. Exit status: 0 when every transfer succeeded, 1 when any failed \
            (a transfer error or a status outside 200-299), 64 for bad arguments.
            """,
        subcommands: [Fetch.self, Demo.self],
        defaultSubcommand: Demo.self
    )
}
