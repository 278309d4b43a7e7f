import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import Testing

@Suite("Draining a hub", .timeLimit(.minutes(1)))
struct DrainTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.drain.event")
    let other = NotificationName<Int>("test.drain.other")

    @Test("with nothing posted, drain returns")
    func emptyHub() async {
        await hub.drain()
        let token = hub.addObserver(for: name, delivery: .queue(DispatchQueue(label: "idle"))) { _ in }
        await hub.drain()
        token.cancel()
    }

    @Test(".posting: a notification posted from inside a handler is delivered before the drain returns")
    func postingDeferredPost() async {
        let log = Recorder<String>()
        let posted = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let first = hub.addObserver(for: name) { [hub, other] note in
            // Queued behind this delivery: delivered once this handler returns, which the gate holds back.
            hub.post(other, userInfo: note.userInfo)
            posted.signal()
            gate.wait()
            log.append("handler \(note.userInfo) returns")
        }
        let second = hub.addObserver(for: other) { log.append("other \($0.userInfo)") }
        startThread(named: "poster") { [hub, name] in hub.post(name, userInfo: 1) }
        #expect(await onThreadOfItsOwn { posted.wait() } != nil)
        // The inner post has returned: the drain must wait for its delivery.
        hub.drain { log.append("drained") }
        gate.signal()
        #expect(await log.wait(forCount: 3))
        #expect(log.elements == ["handler 1 returns", "other 1", "drained"])
        first.cancel()
        second.cancel()
    }

    @Test(".queue on a serial queue: a slow handler has returned from everything posted before the drain")
    func slowSerialQueue() async {
        let log = Recorder<String>()
        let gate = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "test.drain.slow")
        let token = hub.addObserver(for: name, delivery: .queue(queue)) { note in
            if note.userInfo == 1 { gate.wait() }  // Slow: held until the drain has been asked for.
            log.append("handled \(note.userInfo)")
        }
        for value in 1...3 { hub.post(name, userInfo: value) }
        hub.drain { log.append("drained") }
        gate.signal()
        #expect(await log.wait(forCount: 4))
        #expect(log.elements == ["handled 1", "handled 2", "handled 3", "drained"])
        token.cancel()
    }

    @Test(".queue on a concurrent queue, posted from 4 threads: every observer has handled every notification")
    func concurrentQueueManyPosters() async {
        let queue = DispatchQueue(label: "test.drain.concurrent", attributes: .concurrent)
        let counters = (0..<4).map { _ in Counter() }
        let tokens = counters.map { counter in
            hub.addObserver(for: name, delivery: .queue(queue)) { _ in
                // A little work per notification, so that the mailboxes fill up.
                var x = 0
                for i in 0..<2_000 { x &+= i }
                withExtendedLifetime(x) {}
                counter.increment()
            }
        }
        let posters = Recorder<Void>()
        for _ in 0..<4 {
            startThread(named: "poster") { [hub, name] in
                for value in 0..<500 { hub.post(name, userInfo: value) }
                posters.append(())
            }
        }
        #expect(await posters.wait(forCount: 4))
        await hub.drain()
        #expect(counters.map(\.count) == [2_000, 2_000, 2_000, 2_000])
        for token in tokens { token.cancel() }
    }

    @Test("a sequence holds everything posted before the drain in its buffer")
    func sequenceBuffer() async {
        let sequence = hub.notifications(named: name, bufferingPolicy: .bufferingOldest(10))
        for value in 1...5 { hub.post(name, userInfo: value) }
        await hub.drain()
        var received: [Int] = []
        for await note in sequence {
            received.append(note.userInfo)
            if received.count == 5 { break }
        }
        #expect(received == [1, 2, 3, 4, 5])
    }

    @Test("a drain waits for a .queue observer whose queue is suspended, until it resumes")
    func suspendedQueue() async {
        let log = Recorder<String>()
        let queue = DispatchQueue(label: "test.drain.suspended")
        queue.suspend()
        let token = hub.addObserver(for: name, delivery: .queue(queue)) { log.append("handled \($0.userInfo)") }
        hub.post(name, userInfo: 1)
        hub.drain { log.append("drained") }
        queue.resume()
        #expect(await log.wait(forCount: 2))
        #expect(log.elements == ["handled 1", "drained"])
        token.cancel()
    }

    @Test("an observer cancelled with notifications still in its mailbox does not hold a drain back")
    func cancelledObserver() async {
        let queue = DispatchQueue(label: "test.drain.cancelled")
        queue.suspend()
        let calls = Counter()
        let token = hub.addObserver(for: name, delivery: .queue(queue)) { _ in calls.increment() }
        for value in 1...3 { hub.post(name, userInfo: value) }
        let drained = Recorder<Void>()
        hub.drain { drained.append(()) }
        token.cancel()
        #expect(await drained.wait(forCount: 1))
        queue.resume()
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
        #expect(calls.count == 0)
    }

    @Test("a drain started by a task from inside a .posting and a .queue handler does not deadlock")
    func drainFromInsideHandlers() async {
        let drained = Recorder<String>()
        let queue = DispatchQueue(label: "test.drain.inside")
        let direct = hub.addObserver(for: name) { [hub] note in
            Task {
                await hub.drain()
                drained.append("posting \(note.userInfo)")
            }
        }
        let queued = hub.addObserver(for: other, delivery: .queue(queue)) { [hub] note in
            Task {
                await hub.drain()
                drained.append("queue \(note.userInfo)")
            }
        }
        hub.post(name, userInfo: 1)
        hub.post(other, userInfo: 2)
        #expect(await drained.wait(forCount: 2))
        #expect(Set(drained.elements) == ["posting 1", "queue 2"])
        direct.cancel()
        queued.cancel()
    }
}
