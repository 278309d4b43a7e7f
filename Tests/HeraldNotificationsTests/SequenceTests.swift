import Foundation
import HeraldNotifications
import Testing

@Suite("Async sequences")
struct SequenceTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.sequence.event")

    @Test("a sequence observes from its creation: notifications posted before iteration are delivered in order")
    func buffersFromCreation() async {
        let sequence = hub.notifications(named: name)
        for value in 0..<3 { hub.post(name, userInfo: value) }
        var iterator = sequence.makeAsyncIterator()
        var received: [Int?] = []
        for _ in 0..<3 { received.append(await iterator.next()?.userInfo) }
        #expect(received == [0, 1, 2])
        #expect(sequence.droppedCount == 0)
    }

    @Test("bufferingNewest keeps the newest notifications and counts the dropped oldest ones")
    func bufferingNewestDrops() async {
        let sequence = hub.notifications(named: name, bufferingPolicy: .bufferingNewest(3))
        for value in 0..<10 { hub.post(name, userInfo: value) }
        #expect(sequence.droppedCount == 7)
        var iterator = sequence.makeAsyncIterator()
        var received: [Int?] = []
        for _ in 0..<3 { received.append(await iterator.next()?.userInfo) }
        #expect(received == [7, 8, 9])
    }

    @Test("bufferingOldest keeps the oldest notifications and counts the dropped arriving ones")
    func bufferingOldestDrops() async {
        let sequence = hub.notifications(named: name, bufferingPolicy: .bufferingOldest(3))
        for value in 0..<10 { hub.post(name, userInfo: value) }
        #expect(sequence.droppedCount == 7)
        var iterator = sequence.makeAsyncIterator()
        var received: [Int?] = []
        for _ in 0..<3 { received.append(await iterator.next()?.userInfo) }
        #expect(received == [0, 1, 2])
    }

    @Test("a sequence filtered by sender yields only that sender's notifications")
    func filteredSequence() async {
        let sender = Sender("s")
        let sequence = hub.notifications(named: name, object: sender)
        hub.post(name, object: Sender("other"), userInfo: 1)
        hub.post(name, object: sender, userInfo: 2)
        var iterator = sequence.makeAsyncIterator()
        #expect(await iterator.next()?.userInfo == 2)
    }

    @Test("a sequence ends without waiting for another thread's delivery still under way")
    func endingDoesNotWaitForOtherDeliveries() {
        let other = NotificationName<Int>("test.sequence.other")
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let slow = hub.addObserver(for: other) { _ in
            entered.signal()
            release.wait()
        }
        let hub = hub
        Thread { hub.post(other, userInfo: 1) }.start()
        entered.wait()
        // Made and released (which ends it) while the other thread is inside its handler.
        let ended = DispatchSemaphore(value: 0)
        Thread {
            _ = hub.notifications(named: name)
            ended.signal()
        }.start()
        let endedInTime = ended.wait(timeout: .now() + 10) == .success
        release.signal()
        #expect(endedInTime)
        slow.cancel()
    }

    @Test("cancelling the iterating task ends iteration and removes the observer")
    func cancellationEndsIteration() async {
        let sequence = hub.notifications(named: name)
        let received = Recorder<Int>()
        let consumer = Task {
            for await note in sequence { received.append(note.userInfo) }
            return "finished"
        }
        hub.post(name, userInfo: 1)
        #expect(await received.wait(forCount: 1))
        consumer.cancel()
        #expect(await consumer.value == "finished")
        #expect(!hub.hasObservers(for: name))
        hub.post(name, userInfo: 2)
        #expect(received.elements == [1])
    }

    @Test("a cancelled task's next() is nil even with notifications buffered, and the observer goes")
    func cancellationEndsBufferedIteration() async {
        let sequence = hub.notifications(named: name)
        for value in 0..<3 { hub.post(name, userInfo: value) }
        let first = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = sequence.makeAsyncIterator()
            return await iterator.next()?.userInfo
        }.value
        // Before, the stream handed out the buffered notifications first: 0, then 1 and 2.
        #expect(first == nil)
        #expect(!hub.hasObservers(for: name))
    }

    @Test("releasing a sequence that was never iterated removes its observer")
    func releasingRemoves() {
        do {
            let sequence = hub.notifications(named: name)
            #expect(hub.hasObservers(for: name))
            _ = sequence
        }
        #expect(!hub.hasObservers(for: name))
    }
}
