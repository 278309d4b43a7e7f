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

    func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        calls.withLock { $0.append("waiting") }
    }

    func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        calls.withLock { $0.append("waitEnded") }
    }

    func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        calls.withLock { $0.append("reachability") }
    }

    func connectionDidChangeState(_ notification: TypedNotification<ConnectionStateChange>) {
        calls.withLock { $0.append("connection") }
    }

    let observesConnections: Bool

    init(observesConnections: Bool = true) {
        self.observesConnections = observesConnections
    }
}

@Suite("SessionObserver protocol form")
struct SessionObserverTests {
    @Test("the connectivity wait and the reachability change are dispatched to their methods")
    func connectivityMethodsDispatched() {
        let center = NotificationHub()
        let observer = EveryMethodObserver()
        let token = center.addObserver(observer)
        defer { token.cancel() }
        let request = RequestSummary(method: "GET", url: URL(string: "http://127.0.0.1/")!)
        center.post(
            .taskIsWaitingForConnectivity,
            userInfo: TaskConnectivityWait(
                taskIdentifier: 1, sessionIdentifier: 1, request: request, date: Date(),
                error: HeraldError(.cannotConnect, "no route")))
        center.post(
            .taskDidEndWaitingForConnectivity,
            userInfo: TaskConnectivityWait(
                taskIdentifier: 1, sessionIdentifier: 1, request: request, date: Date(),
                error: HeraldError(.cannotConnect, "no route")))
        center.post(
            .reachabilityDidChange,
            userInfo: ReachabilityChange(status: .notReachable, previousStatus: .unknown, host: nil, date: Date()))
        #expect(observer.calls.withLock { $0 } == ["waiting", "waitEnded", "reachability"])
    }

    @Test("connection changes reach an observer that asks for them, and only such an observer")
    func connectionChangesOnRequest() {
        let center = NotificationHub()
        let asking = EveryMethodObserver()
        let other = EveryMethodObserver(observesConnections: false)
        let tokens = [center.addObserver(asking), center.addObserver(other)]
        defer { for token in tokens { token.cancel() } }
        center.post(
            .connectionDidChangeState,
            userInfo: ConnectionStateChange(
                sessionIdentifier: 1, connectionIdentifier: 1, state: .active, previousState: nil, scheme: "http",
                host: "127.0.0.1", port: 80, peerAddress: "127.0.0.1", peerPort: 80, protocolVersion: nil, age: 0,
                activeConnections: 1, idleConnections: 0, date: Date()))
        #expect(asking.calls.withLock { $0 } == ["connection"])
        #expect(other.calls.withLock { $0 }.isEmpty)
        // The default says no: an observer that doesn't implement it never makes a session report connections.
        final class Quiet: SessionObserver {}
        let alone = NotificationHub()
        let token = alone.addObserver(Quiet())
        defer { token.cancel() }
        #expect(!alone.hasObservers(for: .connectionDidChangeState))
    }

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
        // The response waits at a gate until the task has been suspended and resumed, so that the transfer
        // can't finish between resume() and suspend() however the threads are scheduled (only the first request
        // waits: a resume that starts the transfer again is answered at once).
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/json?gate=observer-lifecycle")))
        task.resume()
        task.suspend()
        try await fixture.recorder.waitUntil { $0.count == 2 }
        task.resume()
        fixture.server.openGate("observer-lifecycle")
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
        // The connection changes interleave with the tasks' own notifications (they are posted from the same
        // queue, about a millisecond after they happen), and all come before the invalidation.
        func check(_ calls: [String]) {
            #expect(calls.filter { $0 != "connection" } == expected)
            #expect(calls.contains("connection"))
            #expect(calls.last == "invalidate")
        }
        check(direct.calls.withLock { $0 })
        // The queued observer gets them asynchronously: flush its queue with a barrier.
        await withCheckedContinuation { continuation in
            concurrent.async(flags: .barrier) { continuation.resume() }
        }
        check(queued.calls.withLock { $0 })
        // The same sequence, connection changes included, whatever the delivery.
        #expect(queued.calls.withLock { $0 } == direct.calls.withLock { $0 })
        directToken.cancel()
        queuedToken.cancel()
        try await fixture.server.shutdown()
    }

    @Test("a .posting observer runs apart from the completion queue: it may wait for a handler")
    func observerMayWaitForTheCompletionQueue() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let count = 20
        let observed = Countdown(count)
        // Waits on the completion queue from the event queue: were the two one thread, it would wait for
        // itself.
        let token = fixture.center.addObserver(for: .taskDidComplete, delivery: .posting) { _ in
            session.completionQueue.sync {}
            observed.countDown()
        }
        for index in 0..<count {
            try session.dataTask(with: Request(url: fixture.server.url("/json?n=\(index)"))) { _, _, _ in }.resume()
        }
        #expect(await observed.wait(timeout: .seconds(30)), "\(observed.remaining) completions never observed")
        token.cancel()
        try await fixture.tearDown()
    }

    @Test("a completion handler may wait for a .posting observer to see an event")
    func handlerMayWaitForAnObserver() async throws {
        let fixture = try await SessionFixture.make()
        let count = 20
        let handlersSawResume = Countdown(count)
        var tokens: [ObservationToken] = []
        for index in 0..<count {
            let seen = DispatchSemaphore(value: 0)
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json?n=\(index)"))) {
                _, _, _ in
                // On the completion queue, waiting for the event queue: were the two one thread, it would
                // wait for itself until the timeout.
                if seen.wait(timeout: .now() + 10) == .success { handlersSawResume.countDown() }
            }
            tokens.append(fixture.center.addObserver(for: .taskDidResume, object: task) { _ in seen.signal() })
            task.resume()
        }
        let allSaw = await handlersSawResume.wait(timeout: .seconds(30))
        #expect(allSaw, "\(handlersSawResume.remaining) handlers waited in vain")
        for token in tokens { token.cancel() }
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

    @Test("a .queue observer whose token is cancelled gets none of the notifications still waiting on its queue")
    func queuedCallsDiscardedOnCancel() async throws {
        let fixture = try await SessionFixture.make()
        let observer = EveryMethodObserver()
        let queue = DispatchQueue(label: "held")
        queue.suspend()
        let token = fixture.center.addObserver(observer, delivery: .queue(queue))
        let after = RecordingObserver(center: fixture.center)
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        task.resume()
        // `after` saw the resume, so it was forwarded to the observer's queue, which is held.
        try await after.waitUntil { $0.contains { $0.kind == .resume } }
        token.cancel()
        queue.resume()
        queue.sync {}
        #expect(observer.calls.withLock { $0 }.isEmpty)
        try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }
}

/// Holds its `taskDidResume` until released, and records the calls and the ends it hears.
private final class HeldResumeObserver: SessionObserver {
    let calls = Locked<[String]>([])
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        entered.signal()
        _ = release.wait(timeout: .now() + 20)
        calls.withLock { $0.append("resume \(notification.userInfo.taskIdentifier)") }
    }

    func observationDidEnd(_ end: ObservationEnd) {
        let tasks = end.openTasks.map(\.taskIdentifier).sorted()
        calls.withLock { $0.append("end \(tasks)") }
    }
}

extension SessionObserverTests {
    @Test("a token ended inside a handler while a resume is delivered elsewhere tells its end after that resume")
    func endWaitsForResumeUnderWay() {
        let center = NotificationHub()
        let other = NotificationHub()
        let observer = HeldResumeObserver()
        let token = center.addObserver(observer)
        let request = RequestSummary(method: "GET", url: URL(string: "http://127.0.0.1/")!)
        let posted = DispatchGroup()
        DispatchQueue.global().async(group: posted) {
            center.post(
                .taskDidResume,
                userInfo: TaskLifecycleEvent(taskIdentifier: 7, sessionIdentifier: 1, date: Date(), request: request))
        }
        #expect(observer.entered.wait(timeout: .now() + 20) == .success)
        // A handler (of another hub) ends the token: it doesn't wait for the resume under way on the other thread.
        let canceller = other.addObserver(for: .taskDidResume) { _ in token.cancel() }
        other.post(
            .taskDidResume,
            userInfo: TaskLifecycleEvent(taskIdentifier: 1, sessionIdentifier: 2, date: Date(), request: request))
        // Told once that resume has returned, so the observer takes back what it added too. (Before, the end came
        // first, without task 7, which the observer then counted for good.)
        #expect(observer.calls.withLock { $0 }.isEmpty)
        observer.release.signal()
        #expect(posted.wait(timeout: .now() + 20) == .success)
        #expect(observer.calls.withLock { $0 } == ["resume 7", "end [7]"])
        canceller.cancel()
    }
}
