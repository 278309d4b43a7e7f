import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// What a task's transport needs between its transfers — the next redirect hop, here — runs on the engine's
/// loop thread, where no user code runs, and its hooks on the hook queue: slow observers, slow completion handlers and another task's slow hook leave every
/// other task's hops on time. Timed at the server: when each hop's request arrived.
///
/// One test at a time, and `make test` runs the suite in a process of its own: each compares a slowed round
/// with an unslowed one, and beside 150 other suites starting on two cores the unslowed round itself took
/// 2.5 s, a bound the slowed round would meet even on a transport that waited for the slow code.
@Suite("The transport never waits for user code", .serialized)
struct TransportLaneTests {
    /// What a round slows down on purpose.
    enum Slowness: Sendable, CustomStringConvertible {
        case none
        /// A `.posting` observer of `taskDidComplete` that takes 100 ms.
        case postingObserver
        /// Completion handlers that take 100 ms each.
        case completionHandlers
        /// The redirection hook takes 2 s for task 0's first hop (and returns at once for every other).
        case redirectionHookOfOneTask

        var description: String {
            switch self {
            case .none: "nothing"
            case .postingObserver: "a 100 ms .posting observer"
            case .completionHandlers: "100 ms completion handlers"
            case .redirectionHookOfOneTask: "one task's 2 s redirection hook"
            }
        }
    }

    static let taskCount = 16

    /// The slow user code under test, not a wait: a handler, observer or hook that keeps its thread for
    /// `seconds`, as one writing a log file or calling out would. Nothing here waits for an event with it.
    static func occupyThread(for seconds: TimeInterval) {
        Thread.sleep(forTimeInterval: seconds)
    }
    static let userDelay: TimeInterval = 0.1
    static let hookDelay: TimeInterval = 2

    /// Runs 16 data tasks on `sessionCount` fresh sessions (task `i` on session `i % sessionCount`), task `i`
    /// following `i % 8 + 1` redirects, all resumed at once, and returns the time from the round's first
    /// request reaching the server to the last hop of the tasks not slowed on purpose (task 0 is left out of
    /// every round, so that the rounds compare alike).
    static func spread(
        _ slowness: Slowness, round: String, server: TestServer, sessionCount: Int = 1
    ) async throws -> Duration {
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = taskCount
        let center = NotificationHub()
        let sessions = (0..<sessionCount).map { _ in
            SessionManager(configuration: configuration, notificationCenter: center)
        }
        var token: ObservationToken?
        if case .postingObserver = slowness {
            token = center.addObserver(for: .taskDidComplete, delivery: .posting) { _ in
                occupyThread(for: userDelay)
            }
        }
        for session in sessions {
            session.responseSerializer = DataResponseSerializer()
            if case .redirectionHookOfOneTask = slowness {
                session.taskWillPerformHTTPRedirection = { _, _, proposed in
                    if proposed.headers["X-Task"] == "0", proposed.url.path == "/redirect/0" {
                        occupyThread(for: hookDelay)
                    }
                    return proposed
                }
            }
        }
        let done = Countdown(taskCount)
        let failures = Locked<[String]>([])
        let slowHandlers: Bool = if case .completionHandlers = slowness { true } else { false }
        var tasks: [DataTask] = []
        for index in 0..<taskCount {
            let hops = index % 8 + 1
            let request = Request(
                url: server.url("/redirect/\(hops)"), headers: ["X-Task": "\(index)", "X-Round": round])
            tasks.append(
                try sessions[index % sessionCount].dataTask(with: request) { response, _, error in
                    if error != nil || response?.statusCode != 200 {
                        failures.withLock { $0.append("task \(index): \(String(describing: error))") }
                    }
                    if slowHandlers { occupyThread(for: userDelay) }
                    done.countDown()
                })
        }
        for task in tasks { task.resume() }
        let finished = await done.wait(timeout: .seconds(60))
        try #require(finished, "\(slowness): \(done.remaining) tasks never completed")
        #expect(failures.withLock { $0 }.isEmpty, "\(slowness): \(failures.withLock { $0 })")
        for session in sessions { await session.invalidateAndWait(cancelingTasks: true) }
        token?.cancel()

        let requests = server.statistics.requests.filter { $0.headerValue("X-Round") == round }
        let expectedHops = (0..<taskCount).reduce(0) { $0 + $1 % 8 + 2 }
        #expect(requests.count == expectedHops, "\(slowness): \(requests.count) requests, \(expectedHops) expected")
        let first = try #require(requests.map(\.receivedAt).min())
        let measured = requests.filter { $0.headerValue("X-Task") != "0" }.map(\.receivedAt)
        let last = try #require(measured.max())
        return first.duration(to: last)
    }

    /// The slowed round keeps within 1.5× of the unslowed one, in at least one of three tries (a busy machine
    /// may stretch either round of one try). Each try measures an unslowed round before the slowed one and
    /// another after it, and the bound is the quicker of the two: a moment of contention that stretched one
    /// unslowed round doesn't loosen it. With the slow work on the transport's queue the hops spread over
    /// 9–20× as long.
    static func expectOnTime(_ slowness: Slowness, sessionCount: Int = 1) async throws {
        let server = try await TestServer.start()
        var rounds: [(baseline: Duration, slowed: Duration)] = []
        for attempt in 0..<3 {
            let before = try await spread(
                .none, round: "before-\(attempt)", server: server, sessionCount: sessionCount)
            let slowed = try await spread(
                slowness, round: "slowed-\(attempt)", server: server, sessionCount: sessionCount)
            let after = try await spread(
                .none, round: "after-\(attempt)", server: server, sessionCount: sessionCount)
            rounds.append((min(before, after), slowed))
            if slowed <= bound(min(before, after)) { break }
        }
        try await server.shutdown()
        print(
            "transport-lane rounds with \(slowness), \(sessionCount) session(s):",
            rounds.map { "\($0.baseline) → \($0.slowed)" })
        let met = rounds.contains { $0.slowed <= bound($0.baseline) }
        #expect(
            met,
            "with \(slowness) on \(sessionCount) session(s), every hop should reach the server within 1.5× of the run without: \(rounds)"
        )
    }

    /// 1.5× the unslowed round, which counts as at least 50 ms: loopback answers 60 requests far faster than
    /// a thread wakes on a busy machine, and 1.5× of a few milliseconds would measure the scheduler.
    static func bound(_ baseline: Duration) -> Duration {
        max(baseline, .milliseconds(50)) * 1.5
    }

    @Test("a 100 ms .posting observer of taskDidComplete leaves every task's redirect hops on time")
    func slowPostingObserver() async throws {
        try await Self.expectOnTime(.postingObserver)
    }

    @Test("100 ms completion handlers leave every other task's redirect hops on time")
    func slowCompletionHandlers() async throws {
        try await Self.expectOnTime(.completionHandlers)
    }

    @Test("one task's 2 s redirection hook holds back that task alone")
    func slowRedirectionHook() async throws {
        try await Self.expectOnTime(.redirectionHookOfOneTask)
    }

    @Test("8 sessions of two tasks: a 100 ms .posting observer of taskDidComplete leaves every task's hops on time")
    func slowPostingObserverAcrossSessions() async throws {
        try await Self.expectOnTime(.postingObserver, sessionCount: 8)
    }

    @Test("8 sessions of two tasks: 100 ms completion handlers leave every other task's redirect hops on time")
    func slowCompletionHandlersAcrossSessions() async throws {
        try await Self.expectOnTime(.completionHandlers, sessionCount: 8)
    }

    @Test("8 sessions of two tasks: one task's 2 s redirection hook holds back that task alone")
    func slowRedirectionHookAcrossSessions() async throws {
        try await Self.expectOnTime(.redirectionHookOfOneTask, sessionCount: 8)
    }

    @Test("redirection hooks blocked in more tasks than the machine has cores hold back no other task's hook")
    func manyBlockedHooks() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let release = DispatchSemaphore(value: 0)
        // More than a pool as wide as the cores could run at once, several times over.
        let blockedCount = ProcessInfo.processInfo.activeProcessorCount * 4 + 2
        let entered = Countdown(blockedCount)
        session.taskWillPerformHTTPRedirection = { task, _, proposed in
            if task.originalRequest.headers["X-Blocked"] == "1" {
                entered.countDown()
                // Held until the free task has completed: the slow user code under test.
                _ = release.wait(timeout: .now() + 30)
            }
            return proposed
        }
        for _ in 0..<blockedCount {
            try session.dataTask(with: Request(url: server.url("/redirect/1"), headers: ["X-Blocked": "1"])).resume()
        }
        // Each task's hook starts while the others' are blocked: on a pool as wide as the cores, the later
        // ones waited for libdispatch to add a thread, about one a second (9 s for 10 hooks on two cores).
        #expect(
            await entered.wait(timeout: .seconds(6)),
            "\(entered.remaining) tasks' hooks waited behind other tasks' blocked hooks")
        let free = Countdown(1)
        try session.dataTask(with: Request(url: server.url("/redirect/1"))) { response, _, _ in
            if response?.statusCode == 200 { free.countDown() }
        }.resume()
        #expect(await free.wait(timeout: .seconds(6)), "a task's redirect waited behind other tasks' blocked hooks")
        for _ in 0..<blockedCount { release.signal() }
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a slow dataTaskDidReceiveResponse answer for one task leaves the others' transfers and completions on time")
    func slowDispositionHook() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let release = DispatchSemaphore(value: 0)
        session.dataTaskDidReceiveResponse = { task, _ in
            if task.originalRequest.url.path == "/text" {
                // Held until the other tasks have completed: on the completion queue this would never end.
                _ = release.wait(timeout: .now() + 30)
            }
            return .allow
        }
        let held = try session.dataTask(with: Request(url: server.url("/text")))
        let others = Countdown(4)
        held.resume()
        for _ in 0..<4 {
            try session.dataTask(with: Request(url: server.url("/json"))) { response, _, _ in
                if response?.statusCode == 200 { others.countDown() }
            }.resume()
        }
        #expect(await others.wait(timeout: .seconds(20)), "\(others.remaining) tasks waited behind one task's hook")
        release.signal()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
