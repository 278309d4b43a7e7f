import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Concurrency stress (issue 7 §4): `resume`, `suspend` and `cancel` from many threads on many tasks, with
/// `invalidate(cancelingTasks:)` landing in the middle. Whatever interleaving happens, every recorded timeline
/// must satisfy DESIGN §5.
@Suite("Concurrency stress on tasks")
struct ConcurrencyStressTests {
    /// Why a timeline breaks the ordering contract, or `nil` when it keeps it: resume and suspend alternate
    /// starting with resume, then exactly one complete, last. A task completes successfully only while
    /// running: completing while suspended (or never resumed) takes an error — a cancellation, or a
    /// failure such as a timeout — never a success.
    ///
    /// - Parameters:
    ///   - timeline: One task's events, in post order.
    ///   - completedWithError: Whether its `taskDidComplete` carried an error.
    static func violation(in timeline: [RecordingObserver.Kind], completedWithError: Bool) -> String? {
        guard timeline.last == .complete else { return "does not end with complete" }
        var running = false
        for kind in timeline.dropLast() {
            switch kind {
            case .resume where !running: running = true
            case .suspend where running: running = false
            default: return "\(kind) out of place"
            }
        }
        if !running, !completedWithError { return "completed successfully while suspended" }
        return nil
    }

    /// ``violation(in:completedWithError:)`` for the events a ``RecordingObserver`` recorded for one task.
    static func violation(in events: [RecordingObserver.Event]) -> String? {
        let completedWithError = events.last { $0.kind == .complete }?.completion?.error != nil
        return violation(in: events.map(\.kind), completedWithError: completedWithError)
    }

    @Test("the timeline checker accepts the contract's shapes and nothing else")
    func checker() {
        for (good, withError): ([RecordingObserver.Kind], Bool) in [
            ([.complete], true), ([.resume, .complete], false), ([.resume, .complete], true),
            ([.resume, .suspend, .complete], true), ([.resume, .suspend, .resume, .complete], false),
        ] {
            #expect(Self.violation(in: good, completedWithError: withError) == nil, "\(good) error: \(withError)")
        }
        for (bad, withError): ([RecordingObserver.Kind], Bool) in [
            ([], true), ([.resume], true), ([.suspend, .complete], true), ([.resume, .resume, .complete], true),
            ([.resume, .complete, .complete], true), ([.complete, .resume], true),
            ([.resume, .suspend, .suspend, .complete], true),
            // Completing successfully without running: never resumed, or suspended and not resumed again.
            ([.complete], false), ([.resume, .suspend, .complete], false),
            ([.resume, .suspend, .resume, .suspend, .complete], false),
        ] {
            #expect(Self.violation(in: bad, completedWithError: withError) != nil, "\(bad) error: \(withError)")
        }
    }

    @Test(
        "8 threads × 1,500 random resume/suspend/cancel calls on 150 tasks, invalidate(cancelingTasks:) midway: every timeline keeps the contract",
        arguments: [true, false]
    )
    func randomLifecycleCalls(cancelingTasks: Bool) async throws {
        // HERALD_STRESS_SEED=<seed> replays a failing run's choices.
        let seed =
            ProcessInfo.processInfo.environment["HERALD_STRESS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let threads = 8
        let callsPerThread = 1_500
        let taskCount = 150
        var configuration = SessionConfiguration()
        configuration.maximumConnectionsPerHost = 32
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let paths = ["/bytes/262144?chunkSize=8192&delayMs=2", "/json", "/delay/20", "/bytes/4096", "/status/500"]
        let handlerCalls = Locked([Int: Int]())
        var tasks: [DataTask] = []
        for index in 0..<taskCount {
            let identifier = Locked(0)
            let request = Request(url: fixture.server.url(paths[index % paths.count]))
            let task = try fixture.session.dataTask(with: request) { _, _, _ in
                let key = identifier.withLock { $0 }
                handlerCalls.withLock { $0[key, default: 0] += 1 }
            }
            identifier.withLock { $0 = task.taskIdentifier }
            tasks.append(task)
        }
        let finished = Countdown(threads)
        let invalidateAt = callsPerThread / 4 + Int(seed % UInt64(callsPerThread / 2))
        for thread in 0..<threads {
            let tasks = tasks
            let session = fixture.session
            let worker = Thread {
                var random = SeededGenerator(seed: seed &+ UInt64(thread))
                for call in 0..<callsPerThread {
                    if thread == 0, call == invalidateAt { session.invalidate(cancelingTasks: cancelingTasks) }
                    let task = tasks[Int(random.next() % UInt64(tasks.count))]
                    // Rare cancels, so that most tasks live long enough to be suspended and resumed many times.
                    switch random.next() % 400 {
                    case 0: task.cancel()
                    case 1..<210: task.resume()
                    default: task.suspend()
                    }
                }
                // Leave no task suspended for ever: finishing invalidation waits for every task.
                if thread == 0 {
                    for task in tasks { task.resume() }
                }
                finished.countDown()
            }
            worker.start()
        }
        #expect(await finished.wait(timeout: .seconds(120)), "seed \(seed)")
        // A task the other threads suspended after thread 0's final sweep would keep the session waiting.
        for task in tasks { task.resume() }
        try await fixture.recorder.waitForInvalidation(timeout: .seconds(120))

        let events = fixture.recorder.events
        var timelines: [Int: [RecordingObserver.Event]] = [:]
        for event in events { if let task = event.taskIdentifier { timelines[task, default: []].append(event) } }
        var problems: [String] = []
        for task in tasks {
            let timeline = timelines[task.taskIdentifier] ?? []
            if let problem = Self.violation(in: timeline) {
                problems.append("#\(task.taskIdentifier) \(timeline.map(\.kind)): \(problem)")
            }
            if task.state != .completed { problems.append("#\(task.taskIdentifier) ended \(task.state)") }
        }
        let count = { (kind: RecordingObserver.Kind) in events.filter { $0.kind == kind }.count }
        let errors = tasks.compactMap { $0.error?.code }
        print(
            "STRESS cancelingTasks=\(cancelingTasks) seed=\(seed) resumes=\(count(.resume)) "
                + "suspends=\(count(.suspend)) completes=\(count(.complete)) cancelled=\(errors.filter { $0 == .cancelled }.count)"
        )
        let calls = handlerCalls.withLock { $0 }
        let notOnce = tasks.filter { calls[$0.taskIdentifier] != 1 }.map(\.taskIdentifier)
        #expect(problems.prefix(5) == [], "seed \(seed)")
        #expect(notOnce.prefix(5) == [], "completion handler not called exactly once; seed \(seed)")
        // sessionDidInvalidate once, after every complete.
        #expect(events.last?.kind == .invalidate, "seed \(seed)")
        #expect(events.filter { $0.kind == .invalidate }.count == 1, "seed \(seed)")
        try await fixture.server.shutdown()
    }
}
