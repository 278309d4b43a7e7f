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
        arguments.compactMap(URL.init(string:))
    }
guard urls.count == max(arguments.count, urls.count), !urls.isEmpty else {
    FileHandle.standardError.write(Data("usage: custom-observer [URL…]\n".utf8))
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
    try session.dataTask(with: Request(url: url)) { response, _, error in
        print("\(url.absoluteString): \(response.map { "\($0.statusCode)" } ?? "-") \(error?.code.description ?? "")")
    }.resume()
}
session.invalidate(cancelingTasks: false)
for await _ in finished.stream {}

let report = reporter.report
print("completed: \(report.completed)")
for line in report.slow { print("slow: \(line)") }
token.cancel()
invalidation.cancel()
try await server?.shutdown()
