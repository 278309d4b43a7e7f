import Dispatch
import HeraldNotifications
import Testing

@Suite("Observation tokens")
struct TokenTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.token.event")

    @Test("a handler that cancels its own token is never called again")
    func cancelOwnToken() {
        let box = TokenBox()
        let calls = Recorder<Int>()
        box.token = hub.addObserver(for: name) { note in
            calls.append(note.userInfo)
            box.cancel()
        }
        hub.post(name, userInfo: 1)
        hub.post(name, userInfo: 2)
        hub.post(name, userInfo: 3)
        #expect(calls.elements == [1])
        #expect(box.token?.isCancelled == true)
        #expect(!hub.hasObservers(for: name))
    }

    @Test("a .queue handler that cancels its own token is never called again, whatever is still pending")
    func cancelOwnQueuedToken() async {
        let box = TokenBox()
        let calls = Recorder<Int>()
        let queue = DispatchQueue(label: "test.token.queue")
        box.token = hub.addObserver(for: name, delivery: .queue(queue)) { note in
            calls.append(note.userInfo)
            box.cancel()
        }
        for value in 0..<100 { hub.post(name, userInfo: value) }
        // A block queued after all the posts runs after every drain the observation scheduled.
        let drained = Recorder<Void>()
        queue.async { drained.append(()) }
        #expect(await drained.wait(forCount: 1))
        #expect(calls.elements == [0])
    }

    @Test("dropping the token removes the observer")
    func droppingTokenRemoves() {
        let calls = Counter()
        var token: ObservationToken? = hub.addObserver(for: name) { _ in calls.increment() }
        hub.post(name, userInfo: 1)
        #expect(calls.count == 1)
        #expect(token != nil)
        token = nil
        hub.post(name, userInfo: 2)
        #expect(calls.count == 1)
        #expect(!hub.hasObservers(for: name))
    }

    @Test("an observer added from inside a handler receives the following notifications, not the current one")
    func addFromInsideHandler() {
        let log = Recorder<String>()
        let added = TokenBox()
        let token = hub.addObserver(for: name) { note in
            log.append("outer \(note.userInfo)")
            if added.token == nil {
                added.token = hub.addObserver(for: name) { log.append("inner \($0.userInfo)") }
            }
        }
        hub.post(name, userInfo: 1)
        hub.post(name, userInfo: 2)
        #expect(log.elements == ["outer 1", "outer 2", "inner 2"])
        _ = token
    }

    @Test("an observer added from inside a handler receives a notification posted there, after the handler")
    func addAndPostFromInsideHandler() {
        let log = Recorder<String>()
        let kept = TokenBox()
        let other = NotificationName<Int>("test.token.kept")
        let token = hub.addObserver(for: name) { note in
            kept.token = hub.addObserver(for: other) { log.append("other \($0.userInfo)") }
            hub.post(other, userInfo: note.userInfo)
            log.append("handler returns")
        }
        hub.post(name, userInfo: 1)
        #expect(log.elements == ["handler returns", "other 1"])
        _ = token
    }

    @Test("a handler that cancels a later observer's token prevents that observer's call")
    func cancelOtherMidDelivery() {
        let log = Recorder<Int>()
        let later = TokenBox()
        let t1 = hub.addObserver(for: name) { _ in
            log.append(1)
            later.cancel()
        }
        later.token = hub.addObserver(for: name) { _ in log.append(2) }
        hub.post(name, userInfo: 0)
        #expect(log.elements == [1])
        _ = t1
    }

    @Test("cancel is idempotent and isCancelled reports it")
    func cancelIsIdempotent() {
        let calls = Counter()
        let token = hub.addObserver(for: name) { _ in calls.increment() }
        #expect(!token.isCancelled)
        token.cancel()
        token.cancel()
        #expect(token.isCancelled)
        hub.post(name, userInfo: 0)
        #expect(calls.count == 0)
    }

    @Test("a combined token cancels every token it combines")
    func combiningCancelsAll() {
        let calls = Recorder<String>()
        let a = NotificationName<Int>("test.token.combined.a")
        let b = NotificationName<String>("test.token.combined.b")
        let parts = [
            hub.addObserver(for: a) { _ in calls.append("a") },
            hub.addObserver(for: b) { _ in calls.append("b") },
        ]
        let combined = ObservationToken(combining: parts)
        hub.post(a, userInfo: 1)
        hub.post(b, userInfo: "x")
        #expect(!combined.isCancelled)
        combined.cancel()
        #expect(combined.isCancelled)
        #expect(parts.allSatisfy { $0.isCancelled })
        hub.post(a, userInfo: 2)
        hub.post(b, userInfo: "y")
        #expect(calls.elements == ["a", "b"])
    }

    @Test("dropping a combined token removes every observer it stands for")
    func droppingCombinedRemovesAll() {
        let calls = Counter()
        let sender = Sender("s")
        var combined: ObservationToken? = ObservationToken(combining: [
            hub.addObserver(for: name) { _ in calls.increment() },
            hub.addObserver(for: name, object: sender) { _ in calls.increment() },
        ])
        #expect(hub.hasObservers(for: name))
        #expect(combined != nil)
        combined = nil
        #expect(!hub.hasObservers(for: name))
        hub.post(name, object: sender, userInfo: 0)
        #expect(calls.count == 0)
    }

    @Test("a combined token is cancelled once all its parts are, and combining nothing is already cancelled")
    func combinedIsCancelledWhenPartsAre() {
        let part = hub.addObserver(for: name) { _ in }
        let combined = ObservationToken(combining: [part])
        part.cancel()
        #expect(combined.isCancelled)
        #expect(ObservationToken(combining: []).isCancelled)
    }

    @Test("tokens are equal only to themselves")
    func identity() {
        let a = hub.addObserver(for: name) { _ in }
        let b = hub.addObserver(for: name) { _ in }
        #expect(a == a)
        #expect(a != b)
        #expect(Set([a, b, a]).count == 2)
    }
}

@Suite("Observation lifetime")
struct ObservationLifetimeTests {
    final class Captured: Sendable {}

    @Test("a dropped observer's handler is released even while the threads that posted to it stay idle")
    func cancelReleasesHandlerCaptures() async {
        let hub = NotificationHub()
        let name = NotificationName<Int>("test.lifetime.event")
        var captured: Captured? = Captured()
        weak let weakCaptured = captured
        // Held in a box, so that the thread that drops it below holds the last reference.
        let box = TokenBox()
        box.token = hub.addObserver(for: name) { [captured] _ in _ = captured }
        captured = nil

        // Post from another thread, which caches the hub's registry, then leave that thread idle.
        let posted = Recorder<Void>()
        let idle = DispatchSemaphore(value: 0)
        startThread(named: "idle poster") {
            hub.post(name, userInfo: 1)
            posted.append(())
            idle.wait()
        }
        #expect(await posted.wait(forCount: 1))
        #expect(weakCaptured != nil)

        #expect(box.token != nil)
        // Dropping the token cancels it, which may wait: not on a thread of the cooperative pool.
        #expect(await onThreadOfItsOwn { box.token = nil } != nil, "dropping the token must return")
        #expect(weakCaptured == nil, "a thread's cached registry must not keep a removed handler alive")
        idle.signal()
    }
}
