import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// `resume`, `suspend` and `cancel` from many threads on tasks that are being retried: whatever lands while
/// the retrier decides, during a backoff delay or while the adapter runs, each task completes exactly once
/// and its retries stay between its first resume and its completion.
@Suite("Concurrency stress on retried tasks")
struct RetryStressTests {
    /// Why a timeline breaks the contract with retries, or `nil`: resume and suspend alternate starting with
    /// resume, retries only after the first resume and at most `limit` of them, then one complete, last.
    static func violation(in timeline: [RecordingObserver.Kind], limit: Int) -> String? {
        guard timeline.last == .complete else { return "does not end with complete" }
        var running = false
        var resumed = false
        var retries = 0
        for kind in timeline.dropLast() {
            switch kind {
            case .resume where !running:
                running = true
                resumed = true
            case .suspend where running: running = false
            case .retry where resumed: retries += 1
            default: return "\(kind) out of place"
            }
        }
        return retries <= limit ? nil : "\(retries) retries"
    }

    @Test("the checker accepts retries between resume and complete, and nothing else")
    func checker() {
        for good: [RecordingObserver.Kind] in [
            [.complete], [.resume, .retry, .retry, .complete], [.resume, .suspend, .retry, .resume, .complete],
        ] {
            #expect(Self.violation(in: good, limit: 2) == nil, "\(good)")
        }
        for bad: [RecordingObserver.Kind] in [
            [.retry, .resume, .complete], [.resume, .retry, .retry, .retry, .complete], [.resume, .complete, .retry],
        ] {
            #expect(Self.violation(in: bad, limit: 2) != nil, "\(bad)")
        }
    }

    @Test(
        "4 threads of random resume/suspend/cancel calls on 60 tasks while they are retried: every timeline keeps the contract"
    )
    func randomCallsOnRetriedTasks() async throws {
        let seed =
            ProcessInfo.processInfo.environment["HERALD_STRESS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let limit = 2
        fixture.session.interceptor = Interceptor(
            adapters: [Interceptor(adapt: { request, _ in request })],
            retriers: [RetryPolicy(retryLimit: limit, backoffScale: 0.002, maximumBackoff: 0.01)])
        let handlerCalls = Locked([Int: Int]())
        var tasks: [DataTask] = []
        for index in 0..<60 {
            // Flaky ones succeed on the third attempt; every fifth always fails and runs out of retries.
            let path = index % 5 == 0 ? "/status/503" : "/flaky?key=stress-\(index)&fail=2"
            let identifier = Locked(0)
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url(path))) { _, _, _ in
                let key = identifier.withLock { $0 }
                handlerCalls.withLock { $0[key, default: 0] += 1 }
            }
            identifier.withLock { $0 = task.taskIdentifier }
            tasks.append(task)
        }
        let finished = Countdown(4)
        for thread in 0..<4 {
            let tasks = tasks
            Thread {
                var random = SeededGenerator(seed: seed &+ UInt64(thread))
                // Calls keep coming while tasks are retried (until every task completed, or a cap), so they
                // land during the retriers' decisions, the backoff delays and the adapters too.
                for call in 0..<4_000 {
                    if call % 50 == 0, handlerCalls.withLock({ $0.count }) == tasks.count { break }
                    let task = tasks[Int(random.next() % UInt64(tasks.count))]
                    // Rare cancels, so that most tasks live through their retries; resumes win over suspends.
                    switch random.next() % 6_000 {
                    case 0: task.cancel()
                    case 1..<4_000: task.resume()
                    default: task.suspend()
                    }
                }
                finished.countDown()
            }.start()
        }
        #expect(await finished.wait(timeout: .seconds(120)), "seed \(seed)")
        for task in tasks { task.resume() }
        try await fixture.recorder.waitForCompletions(tasks.count, timeout: .seconds(120))

        var timelines: [Int: [RecordingObserver.Kind]] = [:]
        for event in fixture.recorder.events {
            if let task = event.taskIdentifier { timelines[task, default: []].append(event.kind) }
        }
        var problems: [String] = []
        for task in tasks {
            let timeline = timelines[task.taskIdentifier] ?? []
            if let problem = Self.violation(in: timeline, limit: limit) {
                problems.append("#\(task.taskIdentifier) \(timeline): \(problem)")
            }
        }
        let calls = handlerCalls.withLock { $0 }
        let notOnce = tasks.filter { calls[$0.taskIdentifier] != 1 }.map(\.taskIdentifier)
        let retries = fixture.recorder.events.filter { $0.kind == .retry }.count
        let codes = tasks.map { $0.error?.code.description ?? "ok" }
        print(
            "RETRY STRESS seed=\(seed) retries=\(retries) outcomes=\(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))"
        )
        let retryErrors = fixture.recorder.events.compactMap { $0.retry?.error.code.description }
        print("RETRY STRESS retry causes=\(Dictionary(grouping: retryErrors, by: { $0 }).mapValues(\.count))")
        #expect(retries > 0, "seed \(seed)")
        #expect(problems.prefix(5) == [], "seed \(seed)")
        #expect(notOnce.prefix(5) == [], "completion handler not called exactly once; seed \(seed)")
        try await fixture.tearDown()
    }
}
