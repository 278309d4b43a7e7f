import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Implements every requirement with its exact signature; the test fails if any one is not dispatched.
private final class EveryMethodObserver: SessionObserver {
    let calls = Locked<[String]>([])

    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        calls.withLock { $0.append("resume") }
    }

    func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        calls.withLock { $0.append("suspend") }
    }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        calls.withLock { $0.append("complete") }
    }

    func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        calls.withLock { $0.append("invalidate") }
    }

    func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        calls.withLock { $0.append("moveFailed") }
    }

    func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        calls.withLock { $0.append("retry") }
    }
}

/// Counts the times a completion handler and a `.posting` observer of the same session ran at once.
private final class OverlapDetector: SessionObserver {
    private struct State {
        var running = 0
        var overlaps = 0
        var runs = 0
        var checksum: UInt64 = 0
    }

    private let state = Locked(State())

    var overlaps: Int { state.withLock { $0.overlaps } }
    var runs: Int { state.withLock { $0.runs } }

    /// Enters, works for some microseconds outside the lock (so that a run on another thread would meet
    /// it), and leaves.
    func run() {
        state.withLock {
            $0.running += 1
            $0.runs += 1
            if $0.running > 1 { $0.overlaps += 1 }
        }
        var value: UInt64 = 0x9E37_79B9_7F4A_7C15
        for step in 0..<20_000 { value = (value ^ UInt64(step)) &* 0x100_0000_01B3 }
        state.withLock {
            $0.checksum ^= value
            $0.running -= 1
        }
    }

    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) { run() }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) { run() }
}

@Suite("SessionObserver protocol form")
struct SessionObserverTests {
    @Test("every SessionObserver method is dispatched, in posting order, on a concurrent queue too")
    func everyMethodDispatched() async throws {
        let fixture = try await SessionFixture.make()
        let direct = EveryMethodObserver()
        let queued = EveryMethodObserver()
        let concurrent = DispatchQueue(label: "observer", attributes: .concurrent)
        let directToken = fixture.center.addObserver(direct)
        let queuedToken = fixture.center.addObserver(queued, delivery: .queue(concurrent))
        // Registered after `direct`: once it has seen an event, so has `direct` (same posting thread).
        let after = RecordingObserver(center: fixture.center)
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        task.resume()
        task.suspend()
        try await fixture.recorder.waitUntil { $0.count == 2 }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // A download whose destination directory does not exist: its move fails.
        let download = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/100")),
            destination: { temporaryURL, _ in
                temporaryURL.deletingLastPathComponent().appendingPathComponent("missing/file")
            })
        download.resume()
        try await fixture.recorder.waitForCompletions(2)
        try? FileManager.default.removeItem(at: download.temporaryURL)
        // A server failing once: the task is retried.
        let flaky = try fixture.session.dataTask(with: Request(url: fixture.server.url("/flaky?key=observer&fail=1")))
        flaky.interceptor = RetryPolicy(backoffScale: 0.01)
        flaky.resume()
        try await fixture.recorder.waitForCompletions(3)
        fixture.session.invalidate(cancelingTasks: false)
        try await after.waitForInvalidation()
        let expected = [
            "resume", "suspend", "resume", "complete", "resume", "moveFailed", "complete", "resume", "retry",
            "complete",
            "invalidate",
        ]
        #expect(direct.calls.withLock { $0 } == expected)
        // The queued observer gets them asynchronously: flush its queue with a barrier.
        await withCheckedContinuation { continuation in
            concurrent.async(flags: .barrier) { continuation.resume() }
        }
        #expect(queued.calls.withLock { $0 } == expected)
        directToken.cancel()
        queuedToken.cancel()
        try await fixture.server.shutdown()
    }

    @Test("with the session's own completion queue, completion handlers and .posting observers never overlap")
    func ownCompletionQueueSerializesObservers() async throws {
        let fixture = try await SessionFixture.make()
        let detector = OverlapDetector()
        let token = fixture.center.addObserver(detector)
        let count = 40
        for index in 0..<count {
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json?n=\(index)"))) {
                _, _, _ in detector.run()
            }
            task.resume()
        }
        try await fixture.recorder.waitForCompletions(count)
        await fixture.center.drain()
        // Each task: a resume and a completion observed, and its completion handler.
        #expect(detector.runs == 3 * count)
        #expect(detector.overlaps == 0)
        token.cancel()
        try await fixture.tearDown()
    }

    @Test("tasks of a session post nothing on another session's center")
    func foreignCenterSeesNothing() async throws {
        let fixture = try await SessionFixture.make()
        let otherCenter = NotificationHub()
        let other = RecordingObserver(center: otherCenter)
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(other.events.isEmpty)
        try await fixture.tearDown()
    }
}
