import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import SignalStop
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A custom observer watching a session: `custom-observer [URL…]`. Without URLs it starts the loopback
// test server and fetches a fast and a slow endpoint from it. Exits 0 when every request got a 2xx answer,
// 1 when one failed or answered otherwise (or the test server could not start), 64 on bad arguments, 74 when
// its report could not be written to stdout, and 128 + the signal's number (130 for SIGINT, 143 for SIGTERM,
// 129 for SIGHUP) when a signal stopped it: the requests still running are cancelled and the report printed
// first. URLs are printed without their credentials.

// A standard stream closed at launch (`>&-`) gets /dev/null, first thing: the server's or the engine's first
// descriptor would otherwise take its number, and the report would go there.
for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 {
    _ = open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY)
}
// A reader that goes away (`| head -0`) makes writes to the closed pipe fail with EPIPE, which the report's
// writes turn into exit status 74, instead of killing the process with SIGPIPE.
signal(SIGPIPE, SIG_IGN)

/// Writes `text` to stderr. A closed or full stderr loses the text, never the run: `FileHandle.write(_:)`
/// would trap on `EBADF`, `EPIPE` or `ENOSPC`.
func writeError(_ text: String) {
    FileDescriptorOutput.write(text, to: STDERR_FILENO)
}

/// The `errno` of the first report line that could not be written to stdout, if one could not.
let outputFailure = Mutex<Int32?>(nil)

/// Writes one line of the report to stdout, the same way; a line that can't be written is remembered, and
/// the exit status says so.
func writeLine(_ line: String) {
    guard outputFailure.withLock({ $0 == nil }),
        let failure = FileDescriptorOutput.write(line + "\n", to: STDOUT_FILENO)
    else { return }
    outputFailure.withLock { $0 = failure }
}

/// The URL as it may be shown: user name, password and signing query items redacted.
func shown(_ url: URL) -> String {
    LogRedaction.default.redacting(url)
}

// SIGINT, SIGTERM and SIGHUP no longer end the process at once: the first cancels the requests (below).
let stop = SignalStop()
stop.watch()

let arguments = Array(CommandLine.arguments.dropFirst())
let server: TestServer?
if arguments.isEmpty {
    // The embedded server is on loopback: reached directly, whatever proxy the environment names (libcurl would
    // send even 127.0.0.1 through `http_proxy`). Set before the session exists.
    setenv("no_proxy", "127.0.0.1,::1,localhost", 1)
    setenv("NO_PROXY", "127.0.0.1,::1,localhost", 1)
}
do {
    server = arguments.isEmpty ? try await TestServer.start() : nil
} catch {
    writeError("custom-observer: cannot start the loopback test server: \(error)\n")
    exit(1)
}
let urls: [URL] =
    if let server { [server.url("/json"), server.url("/delay/400"), server.url("/text")] } else {
        // http and https URLs with a host only: anything else the session would refuse.
        arguments.compactMap(URL.init(string:)).filter {
            ["http", "https"].contains($0.scheme?.lowercased() ?? "") && !($0.host ?? "").isEmpty
        }
    }
guard urls.count == max(arguments.count, urls.count), !urls.isEmpty else {
    writeError("usage: custom-observer [URL…] (http or https URLs)\n")
    exit(64)
}

let center = NotificationHub()
let reporter = SlowRequestReporter(threshold: .milliseconds(250))
let token = center.addObserver(reporter)
let session = SessionManager(notificationCenter: center)
session.responseSerializer = DataResponseSerializer()

/// The requests that failed, were refused, or answered outside 200–299.
let failures = Mutex(0)
let finished = AsyncStream<Void>.makeStream()
let invalidation = center.addObserver(for: .sessionDidInvalidate) { _ in finished.continuation.finish() }
// A signal cancels what still runs; each request's line and the report follow as usual.
stop.whenSignalled { [session] in session.invalidate(cancelingTasks: true) }
for url in urls where stop.receivedSignal == nil {
    do {
        try session.dataTask(with: Request(url: url)) { response, _, error in
            if error != nil || !(200..<300).contains(response?.statusCode ?? 0) { failures.withLock { $0 += 1 } }
            writeLine("\(shown(url)): \(response.map { "\($0.statusCode)" } ?? "-") \(error?.code.description ?? "")")
        }.resume()
    } catch {
        // A request the session refuses (a URL it can't use) is reported and counted, and the others go on.
        failures.withLock { $0 += 1 }
        writeError("custom-observer: \(shown(url)): \(error)\n")
    }
}
session.invalidate(cancelingTasks: false)
for await _ in finished.stream {}

let report = reporter.report
writeLine("completed: \(report.completed)")
for line in report.slow { writeLine("slow: \(line)") }
token.cancel()
invalidation.cancel()
// The report is complete: a server that doesn't stop cleanly changes nothing of it.
try? await server?.shutdown()
let failed = failures.withLock { $0 }
if failed > 0 { writeLine("failed: \(failed)") }
if let failure = outputFailure.withLock({ $0 }) {
    writeError("custom-observer: cannot write the report to stdout: \(String(cString: strerror(failure)))\n")
    exit(74)
}
if let received = stop.receivedSignal, let status = stop.exitStatus {
    writeError(
        "custom-observer: stopped by \(String(cString: strsignal(received))); the requests still running were "
            + "cancelled\n")
    exit(status)
}
if failed > 0 { exit(1) }
