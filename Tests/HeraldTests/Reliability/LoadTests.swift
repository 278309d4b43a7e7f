import Foundation
@testable import Herald
@testable import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

/// Load: many tasks really in flight at once, each completing exactly once with a well-formed
/// timeline. The figures are printed so they can be quoted in `Docs/Reliability.md`.
@Suite("Load", .serialized)
struct LoadTests {
    static let inFlight = 10_000
    /// Client sockets, plus what the rest of the test process (other suites, the engine, NIO) holds.
    static let descriptorsNeeded = inFlight + 1_000

    @Test(
        "10,000 tasks in flight at once through a barrier: each completes once, resume then complete, then invalidate",
        .enabled(
            if: FileDescriptorLimit.allows(LoadTests.descriptorsNeeded),
            "RLIMIT_NOFILE hard limit is below \(LoadTests.descriptorsNeeded): raise `ulimit -Hn` to run it"),
        .enabled(
            if: TestServerProcess.executable != nil,
            "herald-test-server is not built next to the test binary (build with `swift build --build-tests`)")
    )
    func tenThousandInFlight() async throws {
        let count = Self.inFlight
        // The server runs in a child process: 10,000 connections are 10,000 descriptors on each side.
        let server = try TestServerProcess.start(backlog: 4096)
        defer { server.stop() }
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let completed = Countdown(count)
        let completionToken = center.addObserver(for: .taskDidComplete) { _ in completed.countDown() }
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 0  // No limit: every task gets its own connection.
        configuration.maximumConnectionsTotal = 0
        configuration.timeoutIntervalForRequest = 300
        configuration.httpVersion = .http1_1
        // An engine of its own: 10,000 transfers keep a loop thread busy, and other suites running in parallel
        // must not wait behind them on the shared one (their idle timeouts fired when they did).
        let session = SessionManager(
            configuration: configuration, notificationCenter: center, completionQueue: nil, completionGroup: nil,
            engine: Engine(name: "herald.engine.load-test"))
        session.responseSerializer = DataResponseSerializer()
        let handlerCalls = Locked([Int](repeating: 0, count: count + 1))
        let failures = Locked<[String]>([])

        // Every request parks at a barrier of `count`: none is answered until all of them are waiting at the
        // server, so completing at all proves they were all in flight at the same moment.
        let url = server.url("/barrier/\(count)")
        let rssBefore = ResidentMemory.current
        let start = ContinuousClock.now
        var tasks: [DataTask] = []
        tasks.reserveCapacity(count)
        for _ in 0..<count {
            let identifierBox = Locked(0)
            let task = try session.dataTask(with: Request(url: url)) { response, _, error in
                let identifier = identifierBox.withLock { $0 }
                handlerCalls.withLock { $0[identifier] += 1 }
                if let error {
                    failures.withLock { $0.append("#\(identifier): \(error)") }
                } else if response?.statusCode != 200 {
                    failures.withLock { $0.append("#\(identifier): status \(response?.statusCode ?? -1)") }
                }
            }
            identifierBox.withLock { $0 = task.taskIdentifier }
            tasks.append(task)
        }
        for task in tasks { task.resume() }
        let allCompleted = await completed.wait(timeout: .seconds(120))
        let elapsed = ContinuousClock.now - start
        let rssGrowth = ResidentMemory.current - rssBefore
        #expect(allCompleted, "\(completed.remaining) of \(count) tasks did not complete")

        session.invalidate(cancelingTasks: true)
        try await recorder.waitForInvalidation(timeout: .seconds(60))
        completionToken.cancel()
        let seconds = elapsed.seconds
        print(
            "LOAD tasks-in-flight=\(count) duration=\(String(format: "%.2f", seconds)) s "
                + "tasks/s=\(Int(Double(count) / seconds)) rss-growth-per-task=\(rssGrowth / count) B")

        #expect(failures.withLock { Array($0.prefix(5)) } == [])
        let calls = handlerCalls.withLock { $0 }
        let wrongCalls = tasks.filter { calls[$0.taskIdentifier] != 1 }.map(\.taskIdentifier)
        #expect(wrongCalls.prefix(5) == [], "completion handler not called exactly once")
        // Exact timelines: resume, complete — nothing else — for every task; sessionDidInvalidate last.
        let events = recorder.events
        var kinds: [Int: [RecordingObserver.Kind]] = [:]
        for event in events { if let task = event.taskIdentifier { kinds[task, default: []].append(event.kind) } }
        let malformed = tasks.filter { kinds[$0.taskIdentifier] != [.resume, .complete] }.map(\.taskIdentifier)
        #expect(malformed.prefix(5) == [], "\(malformed.prefix(5).map { kinds[$0] ?? [] })")
        #expect(events.last?.kind == .invalidate)
        #expect(events.filter { $0.kind == .invalidate }.count == 1)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
