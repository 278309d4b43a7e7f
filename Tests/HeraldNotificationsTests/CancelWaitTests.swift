import Dispatch
import Foundation
import HeraldNotifications
import Testing

@Suite("What cancel() waits for")
struct CancelWaitTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.cancel-wait.event")
    let other = NotificationName<Int>("test.cancel-wait.other")

    @Test("cancel() from another thread returns only after a delivery under way has left the handler")
    func waitsForDeliveryUnderWay() async {
        let log = Recorder<String>()
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let token = hub.addObserver(for: name) { _ in
            entered.signal()
            gate.wait()
            log.append("handler returns")
        }
        startThread(named: "poster") { [hub, name] in hub.post(name, userInfo: 1) }
        #expect(await onThreadOfItsOwn { entered.wait() } != nil)
        startThread(named: "canceller") {
            log.append("cancel called")
            token.cancel()
            log.append("cancel returned")
        }
        #expect(await log.wait(forCount: 1))
        gate.signal()
        #expect(await log.wait(forCount: 3))
        #expect(log.elements == ["cancel called", "handler returns", "cancel returned"])
    }

    @Test("two handlers on two threads cancelling each other's tokens don't deadlock")
    func crossCancellingHandlers() async {
        let first = TokenBox()
        let second = TokenBox()
        let inFirst = DispatchSemaphore(value: 0)
        let inSecond = DispatchSemaphore(value: 0)
        let done = Recorder<String>()
        first.token = hub.addObserver(for: name) { _ in
            inFirst.signal()
            inSecond.wait()  // Both handlers are running now.
            second.cancel()
            done.append("first")
        }
        second.token = hub.addObserver(for: other) { _ in
            inSecond.signal()
            inFirst.wait()
            first.cancel()
            done.append("second")
        }
        startThread(named: "first poster") { [hub, name] in hub.post(name, userInfo: 1) }
        startThread(named: "second poster") { [hub, other] in hub.post(other, userInfo: 2) }
        #expect(await done.wait(forCount: 2))
        #expect(first.token?.isCancelled == true)
        #expect(second.token?.isCancelled == true)
    }

    @Test("a .queue handler cancelling its own token, while another thread posts, returns at once")
    func queueHandlerCancelsItself() async {
        let box = TokenBox()
        let calls = Counter()
        let queue = DispatchQueue(label: "test.cancel-wait.queue")
        box.token = hub.addObserver(for: name, delivery: .queue(queue)) { _ in
            calls.increment()
            box.cancel()
        }
        let posted = Recorder<Void>()
        startThread(named: "poster") { [hub, name] in
            for value in 0..<1_000 { hub.post(name, userInfo: value) }
            posted.append(())
        }
        #expect(await posted.wait(forCount: 1))
        await hub.drain()
        #expect(calls.count == 1)
    }
}
