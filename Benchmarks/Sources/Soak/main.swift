// Soak: a long run of mixed Herald tasks against the loopback TestServer, watching resident memory.
//
//   Soak [--seconds 300] [--interval 10] [--concurrency 32]
//
// The server is `herald-test-server` (HeraldTesting's TestServer in a process of its own, built next to this
// executable by `make soak`): in this process its request log would grow with every request and hide the
// client's own memory behaviour, which is what is measured.
//
// Keeps `concurrency` tasks in flight — data GETs (JSON, 64 KiB, 404s), uploads of 16 KiB, 1 MiB downloads to a
// file that is then deleted, tasks suspended and resumed, tasks cancelled mid-body, requests to a closed port —
// each completion starting the next, for `seconds`. Every `interval` seconds it prints one line with RSS and
// the completions so far; at the end a verdict. RSS is judged after a warm-up (the first fifth of the run):
// "steady" when the least-squares trend over the rest would add less than 4 MiB (or 5 % of the RSS) across
// that window, "unsteady" otherwise. Exit status 0 for steady, 1 for unsteady or when the number of
// completions (notifications and handler calls) is not the number of tasks started.
import Dispatch
import Foundation
import Herald
import HeraldTesting

struct Options {
    var seconds = 300.0
    var interval = 10.0
    var concurrency = 32
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            FileHandle.standardError.write(Data("usage: Soak [--seconds S] [--interval S] [--concurrency N]\n".utf8))
            exit(2)
        }
        switch flag {
        case "--seconds": options.seconds = value
        case "--interval": options.interval = value
        case "--concurrency": options.concurrency = Int(value)
        default:
            FileHandle.standardError.write(Data("unknown option \(flag)\n".utf8))
            exit(2)
        }
    }
    return options
}

func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return (Int(line.dropFirst(6).filter(\.isNumber)) ?? 0) * 1024
    }
    return 0
}

func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

/// Counts what happened, from any thread.
final class Tally: @unchecked Sendable {
    // Safety: `storage` is only touched while `lock` is held, by whichever thread holds it.
    struct Counts {
        var started = 0
        var completed = 0
        var handlerCalls = 0
        var failed = 0
    }

    private let lock = NSLock()
    private var storage = Counts()

    func withLock<Result>(_ body: (inout Counts) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&storage)
    }
}


let options = parseOptions()
let server: TestServerProcess
do {
    server = try TestServerProcess.start()
} catch {
    FileHandle.standardError.write(Data("\(error) (run `make soak`, which builds it)\n".utf8))
    exit(2)
}
// A port that refuses connections: a server started and shut down at once.
let closed = try await TestServer.start()
let refusedURL = closed.url("/json")
try await closed.shutdown()

var configuration = SessionConfiguration()
configuration.maximumConnectionsPerHost = options.concurrency
configuration.timeoutIntervalForRequest = 30
let session = SessionManager(configuration: configuration)
session.responseSerializer = DataResponseSerializer()
let tally = Tally()
let deadline = ContinuousClock.now + .seconds(options.seconds)
let uploadBody = Data(repeating: 0x5A, count: 16 * 1024)
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-soak-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
let completionToken = session.notificationCenter.addObserver(for: .taskDidComplete, object: nil) { note in
    tally.withLock { counts in
        counts.completed += 1
        if note.userInfo.error != nil { counts.failed += 1 }
    }
}

/// Starts one task, of the next kind in rotation; its completion starts the next while time remains.
@Sendable func startNext() {
    guard ContinuousClock.now < deadline else { return }
    // The kind rotates with the number started, so fast-failing kinds don't take over a chain of their own.
    let sequence = tally.withLock { counts in
        counts.started += 1
        return counts.started
    }
    let next: @Sendable () -> Void = {
        tally.withLock { $0.handlerCalls += 1 }
        startNext()
    }
    do {
        switch sequence % 8 {
        case 0:
            try session.dataTask(with: Request(url: server.url("/json"))) { _, _, _ in next() }.resume()
        case 1:
            try session.dataTask(with: Request(url: server.url("/bytes/65536"))) { _, _, _ in next() }.resume()
        case 2:
            try session.uploadTask(
                with: Request(url: server.url("/echo"), method: "POST"), from: uploadBody,
                completionHandler: { _, _, _ in next() }
            ).resume()
        case 3:
            let destination = scratch.appendingPathComponent("download-\(sequence)")
            try session.downloadTask(
                with: Request(url: server.url("/bytes/1048576?chunkSize=65536")),
                destination: { _, _ in destination }
            ) { _, fileURL, _ in
                if let fileURL { try? FileManager.default.removeItem(at: fileURL) }
                next()
            }.resume()
        case 4:
            // Suspended and resumed while the body arrives.
            let task = try session.dataTask(
                with: Request(url: server.url("/bytes/262144?chunkSize=16384&delayMs=5"))
            ) { _, _, _ in next() }
            task.resume()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) {
                task.suspend()
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { task.resume() }
            }
        case 5:
            // Cancelled mid-body.
            let task = try session.dataTask(
                with: Request(url: server.url("/bytes/1048576?chunkSize=16384&delayMs=5"))
            ) { _, _, _ in next() }
            task.resume()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.03) { task.cancel() }
        case 6:
            try session.dataTask(with: Request(url: server.url("/status/404"))) { _, _, _ in next() }.resume()
        default:
            try session.dataTask(with: Request(url: refusedURL)) { _, _, _ in next() }.resume()
        }
    } catch {
        FileHandle.standardError.write(Data("could not create task \(sequence): \(error)\n".utf8))
        tally.withLock { $0.started -= 1 }
        startNext()
    }
}

let start = ContinuousClock.now
let initialRSS = residentBytes()
print("soak: \(options.seconds) s, \(options.concurrency) tasks in flight, RSS at start \(mebibytes(initialRSS))")
for _ in 0..<options.concurrency { startNext() }

var samples: [(seconds: Double, rss: Int)] = []
while ContinuousClock.now < deadline {
    try await Task.sleep(for: .seconds(min(options.interval, max(0.01, (deadline - .now).seconds))))
    let elapsed = (ContinuousClock.now - start).seconds
    let rss = residentBytes()
    samples.append((elapsed, rss))
    let counts = tally.withLock { $0 }
    print(
        String(format: "t=%6.0f s  RSS %@  completed %d (failed %d)", elapsed, mebibytes(rss), counts.completed,
            counts.failed))
}
// Let the last tasks finish, then stop.
session.invalidate(cancelingTasks: false)
let drained = ContinuousClock.now + .seconds(60)
while tally.withLock({ $0.completed < $0.started || $0.handlerCalls < $0.started }), ContinuousClock.now < drained {
    try await Task.sleep(for: .milliseconds(100))
}
completionToken.cancel()
server.stop()
try? FileManager.default.removeItem(at: scratch)

let counts = tally.withLock { $0 }
let warm = samples.filter { $0.seconds >= options.seconds / 5 }
var verdict = "unsteady"
var slopePerMinute = 0.0
if warm.count >= 2 {
    let meanX = warm.map(\.seconds).reduce(0, +) / Double(warm.count)
    let meanY = warm.map { Double($0.rss) }.reduce(0, +) / Double(warm.count)
    let numerator = warm.map { ($0.seconds - meanX) * (Double($0.rss) - meanY) }.reduce(0, +)
    let denominator = warm.map { ($0.seconds - meanX) * ($0.seconds - meanX) }.reduce(0, +)
    let slope = denominator > 0 ? numerator / denominator : 0
    slopePerMinute = slope * 60
    let trendGrowth = slope * ((warm.last?.seconds ?? 0) - (warm.first?.seconds ?? 0))
    if trendGrowth < max(4 * 1_048_576, 0.05 * meanY) { verdict = "steady" }
}
let rssValues = warm.map(\.rss)
print(
    "soak result: \(verdict); tasks completed \(counts.completed) of \(counts.started) started "
        + "(\(counts.failed) failed: 404s, refused connections and cancels are meant to), completion handlers \(counts.handlerCalls); "
        + "RSS start \(mebibytes(initialRSS)), after warm-up min \(mebibytes(rssValues.min() ?? 0)) "
        + "max \(mebibytes(rssValues.max() ?? 0)) end \(mebibytes(samples.last?.rss ?? 0)), "
        + String(format: "trend %+.2f MiB/min", slopePerMinute / 1_048_576))
// Exactly once: as many taskDidComplete notifications and completion-handler calls as tasks started.
let exactlyOnce = counts.completed == counts.started && counts.handlerCalls == counts.started
if !exactlyOnce { print("soak: completions do not match tasks started") }
exit(verdict == "steady" && exactlyOnce ? 0 : 1)

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
