import Foundation
import Herald
import HeraldNotifications
import HeraldTesting

// A custom observer watching a session: `custom-observer [URL…]`. Without URLs it starts the loopback
// test server and fetches a fast and a slow endpoint from it.
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
    FileHandle.standardError.write(Data("usage: custom-observer [URL…] (http or https URLs)\n".utf8))
    exit(64)
}

let center = NotificationHub()
let reporter = SlowRequestReporter(threshold: .milliseconds(250))
let token = center.addObserver(reporter)
let session = SessionManager(notificationCenter: center)
session.responseSerializer = DataResponseSerializer()

let finished = AsyncStream<Void>.makeStream()
let invalidation = center.addObserver(for: .sessionDidInvalidate) { _ in finished.continuation.finish() }
for url in urls {
    do {
        try session.dataTask(with: Request(url: url)) { response, _, error in
            print(
                "\(url.absoluteString): \(response.map { "\($0.statusCode)" } ?? "-") \(error?.code.description ?? "")")
        }.resume()
    } catch {
        // A request the session refuses (a URL it can't use) is reported, and the others go on.
        FileHandle.standardError.write(Data("custom-observer: \(url.absoluteString): \(error)\n".utf8))
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
