import HeraldNotifications
import Testing

@Suite("Order")
struct OrderTests {
    let hub = NotificationHub()
    let first = NotificationName<String>("test.order.first")
    let second = NotificationName<String>("test.order.second")
    let third = NotificationName<String>("test.order.third")

    @Test(
        "a post from the deinit of a sender released as the deferred posts are cleared is delivered before post returns",
        .timeLimit(.minutes(1)))
    func postFromSendersDeinit() async throws {
        final class Probe: Sendable {
            let onDeinit: @Sendable () -> Void
            init(onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
            deinit { onDeinit() }
        }
        let log = Recorder<String>()
        let hub = hub
        let third = third
        let tokens = [
            hub.addObserver(for: first) { [second] _ in
                // The probe's last holder is this deferred post: it goes when the delivered posts are let go.
                hub.post(second, object: Probe { hub.post(third, userInfo: "from deinit") }, userInfo: "B")
            },
            hub.addObserver(for: second) { note in log.append("B1 got \(note.userInfo)") },
            hub.addObserver(for: third) { note in log.append("C1 got \(note.userInfo)") },
        ]
        hub.post(first, userInfo: "A")
        log.append("post returned")
        #expect(log.elements == ["B1 got B", "C1 got from deinit", "post returned"])
        // Nothing is left counted as queued: a drain returns.
        await hub.drain()
        tokens.forEach { $0.cancel() }
    }

    @Test("a handler posting from inside a handler sees breadth-first order")
    func breadthFirst() {
        let log = Recorder<String>()
        let tokens = [
            hub.addObserver(for: first) { note in
                log.append("A1 got \(note.userInfo)")
                hub.post(second, userInfo: "B from A1")
                hub.post(second, userInfo: "B' from A1")
                log.append("A1 returns")
            },
            hub.addObserver(for: first) { note in
                log.append("A2 got \(note.userInfo)")
                hub.post(third, userInfo: "C from A2")
            },
            hub.addObserver(for: second) { note in
                log.append("B1 got \(note.userInfo)")
                if note.userInfo == "B from A1" { hub.post(third, userInfo: "C from B1") }
            },
            hub.addObserver(for: third) { note in log.append("C1 got \(note.userInfo)") },
        ]
        hub.post(first, userInfo: "A")
        log.append("post returned")
        #expect(
            log.elements == [
                "A1 got A", "A1 returns",
                "A2 got A",
                "B1 got B from A1",
                "B1 got B' from A1",
                "C1 got C from A2",
                "C1 got C from B1",
                "post returned",
            ])
        _ = tokens
    }

    @Test("observers of a name are called in registration order, whether they filter by sender or not")
    func registrationOrder() {
        let sender = Sender("s")
        let log = Recorder<Int>()
        let tokens = [
            hub.addObserver(for: first, object: sender) { _ in log.append(1) },
            hub.addObserver(for: first) { _ in log.append(2) },
            hub.addObserver(for: first, object: sender) { _ in log.append(3) },
            hub.addObserver(for: first) { _ in log.append(4) },
        ]
        hub.post(first, object: sender, userInfo: "")
        #expect(log.elements == [1, 2, 3, 4])
        _ = tokens
    }

    @Test("everything posted from one thread reaches each observer, on any delivery, in post order")
    func postOrderPerThread() async {
        let posting = Recorder<Int>()
        let queued = Recorder<Int>()
        let name = NotificationName<Int>("test.order.numbers")
        let sequence = hub.notifications(named: name, bufferingPolicy: .bufferingOldest(1_000))
        let t1 = hub.addObserver(for: name) { posting.append($0.userInfo) }
        let t2 = hub.addObserver(for: name, delivery: .queue(.global())) { queued.append($0.userInfo) }
        for value in 0..<1_000 { hub.post(name, userInfo: value) }
        #expect(await queued.wait(forCount: 1_000))
        var iterator = sequence.makeAsyncIterator()
        var streamed: [Int] = []
        for _ in 0..<1_000 { streamed.append(await iterator.next()?.userInfo ?? -1) }
        #expect(posting.elements == Array(0..<1_000))
        #expect(queued.elements == Array(0..<1_000))
        #expect(streamed == Array(0..<1_000))
        _ = (t1, t2)
    }
}
