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
