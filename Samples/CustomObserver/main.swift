import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A custom observer watching a session: `custom-observer [URL…]`. Without URLs it starts the loopback
// test server and fetches a fast and a slow endpoint from it. Exits 0 when every request got a 2xx answer,
// 1 when one failed or answered otherwise, 64 on bad arguments. URLs are printed without their credentials.

/// Writes `text` to stderr. A closed or full stderr loses the text, never the run: `FileHandle.write(_:)`
/// would trap on `EBADF`, `EPIPE` or `ENOSPC`.
func writeError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}

/// The URL as it may be shown: user name, password and signing query items redacted.
func shown(_ url: URL) -> String {
    LogRedaction.default.redacting(url)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let server: TestServer? = arguments.isEmpty ? try await TestServer.start() : nil
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
for url in urls {
    do {
        try session.dataTask(with: Request(url: url)) { response, _, error in
            if error != nil || !(200..<300).contains(response?.statusCode ?? 0) { failures.withLock { $0 += 1 } }
            print("\(shown(url)): \(response.map { "\($0.statusCode)" } ?? "-") \(error?.code.description ?? "")")
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
print("completed: \(report.completed)")
for line in report.slow { print("slow: \(line)") }
token.cancel()
invalidation.cancel()
try await server?.shutdown()
let failed = failures.withLock { $0 }
if failed > 0 {
    print("failed: \(failed)")
    exit(1)
}
