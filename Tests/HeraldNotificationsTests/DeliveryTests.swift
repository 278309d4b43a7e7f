import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import Testing

@Suite("Delivery")
struct DeliveryTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.delivery.event")

    @Test(".posting (the default) runs the handler on the posting thread before post returns")
    func postingIsSynchronous() {
        let postingThread = pthread_self()
        let ranOnPostingThread = Recorder<Bool>()
        let token = hub.addObserver(for: name) { _ in
            ranOnPostingThread.append(pthread_equal(pthread_self(), postingThread) != 0)
        }
        hub.post(name, userInfo: 1)
        #expect(ranOnPostingThread.elements == [true])
        token.cancel()
    }

    @Test(".queue runs the handler asynchronously on the given queue")
    func queueIsAsynchronous() async {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "test.delivery.queue")
        queue.setSpecific(key: key, value: "mine")
        let gate = DispatchSemaphore(value: 0)
        let onQueue = Recorder<String?>()
        let token = hub.addObserver(for: name, delivery: .queue(queue)) { _ in
            gate.wait()  // Blocks the queue until post has returned: proves the handler does not run inside post.
            onQueue.append(DispatchQueue.getSpecific(key: key))
        }
        hub.post(name, userInfo: 1)
        #expect(onQueue.count == 0)
        gate.signal()
        #expect(await onQueue.wait(forCount: 1))
        #expect(onQueue.elements == ["mine"])
        token.cancel()
    }

    @Test("FIFO holds per observation on a concurrent queue, and a handler never overlaps itself")
    func fifoOnConcurrentQueue() async {
        let queue = DispatchQueue(label: "test.delivery.concurrent", attributes: .concurrent)
        let count = 10_000
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        let inside = Atomic<Int>(0)
        let overlaps = Counter()
        let t1 = hub.addObserver(for: name, delivery: .queue(queue)) { note in
            if inside.add(1, ordering: .acquiringAndReleasing).newValue > 1 { overlaps.increment() }
            first.append(note.userInfo)
            inside.subtract(1, ordering: .acquiringAndReleasing)
        }
        let t2 = hub.addObserver(for: name, delivery: .queue(queue)) { note in second.append(note.userInfo) }
        for value in 0..<count { hub.post(name, userInfo: value) }
        #expect(await first.wait(forCount: count))
        #expect(await second.wait(forCount: count))
        #expect(first.elements == Array(0..<count))
        #expect(second.elements == Array(0..<count))
        #expect(overlaps.count == 0)
        _ = (t1, t2)
    }

    @Test("a cancelled .queue observer runs none of its pending notifications")
    func cancelDiscardsQueued() async {
        let queue = DispatchQueue(label: "test.delivery.cancel")
        let gate = DispatchSemaphore(value: 0)
        let calls = Recorder<Int>()
        queue.async { gate.wait() }  // Hold the queue so every notification is still pending at cancel.
        let token = hub.addObserver(for: name, delivery: .queue(queue)) { calls.append($0.userInfo) }
        for value in 0..<100 { hub.post(name, userInfo: value) }
        token.cancel()
        gate.signal()
        let drained = Recorder<Void>()
        queue.async { drained.append(()) }
        #expect(await drained.wait(forCount: 1))
        #expect(calls.elements.isEmpty)
    }
}
