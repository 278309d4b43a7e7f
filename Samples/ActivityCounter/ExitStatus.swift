/// What `activity-counter` exits with. When a run has several kinds of failure, the most severe wins, in this
/// order: interrupted, local file error, the demo's server unavailable, TLS error, network error, HTTP error.
enum ExitStatus: Int32, CaseIterable, Comparable {
    /// Every URL was downloaded (status 200-299), or, in the demo, behaved as planned.
    case success = 0
    /// A server answered with a status outside 200-299.
    case httpError = 1
    /// A network failure: host not found, connection refused or lost, a timeout, a malformed response, a size
    /// or time limit reached.
    case networkError = 2
    /// A TLS failure: the handshake, an untrusted certificate, a public key that does not match `--pin`.
    case tlsError = 3
    /// Bad arguments (sysexits' EX_USAGE).
    case usage = 64
    /// The demo's embedded loopback server could not start (sysexits' EX_UNAVAILABLE).
    case unavailable = 69
    /// A local file error: `--output-dir` can't be created or written (sysexits' EX_CANTCREAT), or a download
    /// could not be saved.
    case localFileError = 73
    /// Hung up: SIGHUP (the terminal closed, the ssh connection dropped): 128 + 1.
    case hungUp = 129
    /// Interrupted by SIGINT (Ctrl-C): 128 + 2.
    case interrupted = 130
    /// Terminated by SIGTERM: 128 + 15.
    case terminated = 143

    static func < (lhs: ExitStatus, rhs: ExitStatus) -> Bool { lhs.severity < rhs.severity }

    private var severity: Int {
        switch self {
        case .success: 0
        case .httpError: 1
        case .networkError: 2
        case .tlsError: 3
        case .usage: 4
        case .unavailable: 5
        case .localFileError: 6
        case .hungUp, .interrupted, .terminated: 7
        }
    }

    /// One line per status, for `--help`.
    var helpLine: String {
        let meaning =
            switch self {
            case .success: "every URL downloaded (the demo: every URL behaved as planned)"
            case .httpError: "a server answered with a status outside 200-299"
            case .networkError: "a network error: no host, refused, reset, timeout, size or time limit"
            case .tlsError: "a TLS error: handshake, untrusted certificate, --pin mismatch"
            case .usage: "bad arguments"
            case .unavailable: "the demo's embedded loopback server could not start"
            case .localFileError:
                "a local file error: --output-dir unusable, a file not saved, --events or the summary not written"
            case .hungUp: "hung up: SIGHUP (the terminal closed)"
            case .interrupted: "interrupted by SIGINT (Ctrl-C)"
            case .terminated: "terminated by SIGTERM"
            }
        let code = String(rawValue)
        return String(repeating: " ", count: 4 - code.count) + code + "  " + meaning
    }

    /// The table of every status, most severe last.
    static var helpText: String {
        allCases.map(\.helpLine).joined(separator: "\n")
    }
}
