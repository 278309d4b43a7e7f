import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Synchronization
import Testing

/// A suspended task never completes successfully without a resume, even when `suspend()` lands after
/// the transfer's last byte has been counted, while the engine is finishing it.
///
/// This is the race as users meet it, run many times; whether `suspend()` wins it in a given round depends
/// on the scheduler (on a busy machine it can lose every round). `HeldOutcomeTests` pins the held outcome
/// itself, with the suspension placed inside the window in every run.
@Suite("Suspending at the last byte")
struct SuspendAtLastByteTests {
    @Test(
        "150 rounds: resume a 64 KiB GET, suspend the moment its last byte is counted, resume again — no success while suspended"
    )
    func suspendAtLastByte() async throws {
        let rounds = 150
        let size: Int64 = 65_536
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        var violations: [String] = []
        var suspendedBeforeCompletion = 0
        var round = 0
        // At least 150 rounds, and more (up to 600) until suspend() has won the race at least once.
        while round < rounds || (suspendedBeforeCompletion == 0 && round < 4 * rounds) {
            defer { round += 1 }
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/bytes/\(size)")))
            // A thread of its own watches the count, and suspends as soon as it reaches the total.
            let suspended = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let watcher = Thread {
                    while task.downloadProgress.completedUnitCount < size, task.state != .completed {
                        sched_yield()
                    }
                    let wasRunning = task.state == .running
                    task.suspend()
                    continuation.resume(returning: wasRunning && task.state == .suspended)
                }
                watcher.start()
                task.resume()
            }
            if suspended { suspendedBeforeCompletion += 1 }
            task.resume()  // Whoever suspends a task resumes it to have it finish.
            let events = try await fixture.recorder.waitUntil { events in
                events.contains { $0.kind == .complete && $0.taskIdentifier == task.taskIdentifier }
            }
            let timeline = events.filter { $0.taskIdentifier == task.taskIdentifier }
            if let problem = ConcurrencyStressTests.violation(in: timeline) {
                violations.append("round \(round): \(timeline.map(\.kind)): \(problem)")
            }
            if task.error != nil || task.state != .completed {
                violations.append("round \(round): ended \(task.state), error \(String(describing: task.error))")
            }
        }
        print(
            "SUSPEND-AT-LAST-BYTE rounds=\(round) suspended=\(suspendedBeforeCompletion) violations=\(violations.count)"
        )
        if suspendedBeforeCompletion == 0 {
            // The scheduler never let suspend() land in the window: these rounds showed nothing about the
            // hold, which HeldOutcomeTests pins deterministically. Said, not failed: a timing is no verdict.
            Issue.record(
                "suspend() never landed between the last byte and the completion in \(round) rounds",
                severity: .warning)
        }
        #expect(violations.isEmpty, "\(violations.count) of \(round): \(violations.prefix(3))")
        try await fixture.tearDown()
    }
}
