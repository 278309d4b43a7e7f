import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Records `taskDidComplete` and `sessionDidInvalidate` as strings, with the given delivery; optionally
/// slow (a few milliseconds of work per notification, as a sink writing to a slow disk would take).
///
/// The two names are two observations: on a concurrent queue they may run in parallel, so only their
/// content is compared there, not their order.
private final class ShutdownProbe: Sendable {
    let events = Locked<[String]>([])
    private let tokens: [ObservationToken]
    /// Whether the two observations are delivered one after the other (not on a concurrent queue).
    let isOrdered: Bool

    init(center: NotificationHub, delivery: NotificationDelivery, slow: Bool = false, isOrdered: Bool = true) {
        self.isOrdered = isOrdered
        let events = self.events
        let record: @Sendable (String) -> Void = { event in
            if slow { usleep(5_000) }  // Simulated slow work, not a wait for anything.
            events.withLock { $0.append(event) }
        }
        tokens = [
            center.addObserver(for: .taskDidComplete, delivery: delivery) { note in
                record("complete#\(note.userInfo.taskIdentifier)")
            },
            center.addObserver(for: .sessionDidInvalidate, delivery: delivery) { _ in record("invalidate") },
        ]
    }

    var recorded: [String] { events.withLock { $0 } }

    /// Whether it recorded exactly `expected`: in that order if ordered, otherwise in any order.
    func recorded(_ expected: [String]) -> Bool {
        isOrdered ? recorded == expected : recorded.sorted() == expected.sorted()
    }

    func cancel() { for token in tokens { token.cancel() } }
}

/// A plug-in observer that shuts its session down from inside `taskDidComplete`.
private final class ShuttingDownObserver: SessionObserver {
    let session: SessionManager
    let results = Locked<[String]>([])

    init(session: SessionManager) { self.session = session }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let clock = ContinuousClock()
        let start = clock.now
        let drained = session.invalidateAndWait(timeout: .seconds(30))
        results.withLock { $0.append("\(drained) \(clock.now - start < .seconds(5))") }
    }
}

@Suite("Drained shutdown")
struct DrainedShutdownTests {
    /// Every delivery mode, a slow observer and two on one concurrent queue.
    private func probes(on center: NotificationHub) -> [ShutdownProbe] {
        let concurrent = DispatchQueue(label: "test.shutdown.concurrent", attributes: .concurrent)
        return [
            ShutdownProbe(center: center, delivery: .posting),
            ShutdownProbe(center: center, delivery: .queue(DispatchQueue(label: "test.shutdown.serial"))),
            ShutdownProbe(center: center, delivery: .queue(DispatchQueue(label: "test.shutdown.slow")), slow: true),
            ShutdownProbe(center: center, delivery: .queue(concurrent), isOrdered: false),
            ShutdownProbe(center: center, delivery: .queue(concurrent), slow: true, isOrdered: false),
        ]
    }

    @Test("await invalidateAndWait(): every observer, whatever its delivery, has every complete and the invalidate")
    func asyncFormReachesEveryObserver() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let probes = probes(on: center)
        let sequence = center.notifications(named: .sessionDidInvalidate)
        let session = SessionManager(notificationCenter: center)
        var identifiers: [Int] = []
        for path in ["/json", "/delay/100", "/bytes/1000"] {
            let task = try session.dataTask(with: Request(url: server.url(path)))
            identifiers.append(task.taskIdentifier)
            task.resume()
        }
        await session.invalidateAndWait()
        let completes = Set(identifiers.map { "complete#\($0)" })
        for probe in probes {
            let recorded = probe.recorded
            #expect(recorded.count == 4)
            #expect(Set(recorded.filter { $0 != "invalidate" }) == completes)
            #expect(recorded.filter { $0 == "invalidate" }.count == 1)
            if probe.isOrdered { #expect(recorded.last == "invalidate") }
        }
        // The sequence holds it in its buffer: the first element is there at once.
        var iterator = sequence.makeAsyncIterator()
        #expect(await iterator.next()?.userInfo.sessionIdentifier == session.identifier)
        for probe in probes { probe.cancel() }
        try await server.shutdown()
    }

    @Test(
        "invalidateAndWait(cancelingTasks: true) cancels a stalled task and returns after its complete and the invalidate"
    )
    func cancelingTasks() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let probes = probes(on: center)
        let session = SessionManager(notificationCenter: center)
        let stalled = try session.dataTask(with: Request(url: server.url("/fault/stall")))
        stalled.resume()
        try await server.waitForRequests(count: 1)
        await session.invalidateAndWait(cancelingTasks: true)
        #expect(stalled.error?.code == .cancelled)
        for probe in probes {
            #expect(probe.recorded(["complete#\(stalled.taskIdentifier)", "invalidate"]))
        }
        for probe in probes { probe.cancel() }
        try await server.shutdown()
    }

    @Test("the synchronous form, from a plain thread, returns true once every observer has the invalidate")
    func synchronousForm() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let probes = probes(on: center)
        let session = SessionManager(notificationCenter: center)
        let task = try session.dataTask(with: Request(url: server.url("/delay/50")))
        task.resume()
        let returned = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: session.invalidateAndWait(timeout: .seconds(10)))
            }.start()
        }
        #expect(returned)
        for probe in probes {
            #expect(probe.recorded(["complete#\(task.taskIdentifier)", "invalidate"]))
        }
        for probe in probes { probe.cancel() }
        try await server.shutdown()
    }

    @Test("the synchronous form returns false when the timeout passes first (a task never resumed)")
    func synchronousTimeout() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let probe = ShutdownProbe(center: center, delivery: .posting)
        let session = SessionManager(notificationCenter: center)
        let neverResumed = try session.dataTask(with: Request(url: server.url("/json")))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(!session.invalidateAndWait(timeout: .milliseconds(200)))
        #expect(clock.now - start >= .milliseconds(200))
        #expect(probe.recorded.isEmpty)
        // Cancelling the task lets the invalidation finish.
        await session.invalidateAndWait(cancelingTasks: true)
        #expect(probe.recorded == ["complete#\(neverResumed.taskIdentifier)", "invalidate"])
        probe.cancel()
        try await server.shutdown()
    }

    @Test("the async form returns when its calling task is cancelled, and the invalidation goes on")
    func asyncCancelled() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let probe = ShutdownProbe(center: center, delivery: .posting)
        let session = SessionManager(notificationCenter: center)
        // Never resumed: the wait can't end on its own.
        let neverResumed = try session.dataTask(with: Request(url: server.url("/json")))
        let returned = OneShot<Void>()
        let waiter = Task {
            await session.invalidateAndWait()
            returned.send(())
        }
        waiter.cancel()
        try await returned.value(timeout: .seconds(10))
        #expect(probe.recorded.isEmpty)
        #expect(session.isInvalidated)
        // The invalidation went on: cancelling the task lets it finish.
        await session.invalidateAndWait(cancelingTasks: true)
        #expect(probe.recorded == ["complete#\(neverResumed.taskIdentifier)", "invalidate"])
        probe.cancel()
        try await server.shutdown()
    }

    @Test("called from inside a .posting handler or a completion handler, the synchronous form returns false at once")
    func synchronousFormInsideHandlers() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let results = Locked<[String]>([])
        let recorder = RecordingObserver(center: center)
        let clock = ContinuousClock()
        let firstSession = SessionManager(notificationCenter: center)
        let firstTask = try firstSession.dataTask(with: Request(url: server.url("/json")))
        let token = center.addObserver(for: .taskDidComplete, object: firstTask) { _ in
            let start = clock.now
            let drained = firstSession.invalidateAndWait(timeout: .seconds(30))
            results.withLock { $0.append("handler \(drained) \(clock.now - start < .seconds(5))") }
        }
        firstTask.resume()
        let secondSession = SessionManager(notificationCenter: center)
        try secondSession.dataTask(with: Request(url: server.url("/json"))) { _, _, _ in
            let start = clock.now
            let drained = secondSession.invalidateAndWait(timeout: .seconds(30))
            results.withLock { $0.append("completion \(drained) \(clock.now - start < .seconds(5))") }
        }.resume()
        // Both invalidations go through even though neither call waited.
        _ = try await recorder.waitUntil { events in events.filter { $0.kind == .invalidate }.count == 2 }
        #expect(Set(results.withLock { $0 }) == ["handler false true", "completion false true"])
        token.cancel()
        try await server.shutdown()
    }

    @Test(
        "called from a task's hook, or from a destination on a caller's completion queue, the synchronous form returns false at once"
    )
    func synchronousFormInsideHooks() async throws {
        let server = try await TestServer.start()
        let clock = ContinuousClock()
        let results = Locked<[String]>([])
        // A redirection hook: the task can't go on until the hook returns, so a wait could only time out.
        let hooked = SessionManager(notificationCenter: NotificationHub())
        let hookedRecorder = RecordingObserver(center: hooked.notificationCenter)
        hooked.taskWillPerformHTTPRedirection = { _, _, proposed in
            let start = clock.now
            let drained = hooked.invalidateAndWait(timeout: .seconds(30))
            results.withLock { $0.append("hook \(drained) \(clock.now - start < .seconds(5))") }
            return proposed
        }
        try hooked.dataTask(with: Request(url: server.url("/redirect/1"))).resume()
        // A download's destination, with a completion queue of the caller's: it runs on a serial queue of the
        // completion's own, ahead of the step that lets the task go.
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let downloading = SessionManager(
            notificationCenter: NotificationHub(), completionQueue: DispatchQueue(label: "test.completions"))
        let downloadRecorder = RecordingObserver(center: downloading.notificationCenter)
        let destination = scratch.url.appendingPathComponent("file")
        try downloading.downloadTask(
            with: Request(url: server.url("/bytes/100")),
            destination: { _, _ in
                let start = clock.now
                let drained = downloading.invalidateAndWait(cancelingTasks: true, timeout: .seconds(30))
                results.withLock { $0.append("destination \(drained) \(clock.now - start < .seconds(5))") }
                return destination
            }
        ).resume()
        // Before, each call sat out its 30 s.
        _ = try await hookedRecorder.waitForInvalidation(timeout: .seconds(20))
        _ = try await downloadRecorder.waitForInvalidation(timeout: .seconds(20))
        #expect(Set(results.withLock { $0 }) == ["hook false true", "destination false true"])
        try await server.shutdown()
    }

    @Test("called from a SessionObserver method delivered on a queue, the synchronous form returns false at once")
    func synchronousFormInsidePlugIn() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let session = SessionManager(notificationCenter: center)
        let observer = ShuttingDownObserver(session: session)
        let token = center.addObserver(observer, delivery: .queue(DispatchQueue(label: "test.plug-in")))
        try session.dataTask(with: Request(url: server.url("/json"))).resume()
        _ = try await recorder.waitForInvalidation()
        await center.drain()
        #expect(observer.results.withLock { $0 } == ["false true"])
        token.cancel()
        try await server.shutdown()
    }
}
