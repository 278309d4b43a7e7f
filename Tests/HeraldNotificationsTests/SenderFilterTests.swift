import HeraldNotifications
import Testing

@Suite("Sender filter")
struct SenderFilterTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.sender.event")

    @Test("an observer of one sender receives only that sender's notifications; an observer of all receives every one")
    func oneOrAll() {
        let a = Sender("a")
        let b = Sender("b")
        let ofA = Recorder<Int>()
        let ofAll = Recorder<Int>()
        let t1 = hub.addObserver(for: name, object: a) { ofA.append($0.userInfo) }
        let t2 = hub.addObserver(for: name) { ofAll.append($0.userInfo) }
        hub.post(name, object: a, userInfo: 1)
        hub.post(name, object: b, userInfo: 2)
        hub.post(name, userInfo: 3)
        #expect(ofA.elements == [1])
        #expect(ofAll.elements == [1, 2, 3])
        _ = (t1, t2)
    }

    @Test("1 matching among 10,000 observers of other senders is delivered only to the match")
    func oneAmongTenThousand() {
        let others = (0..<10_000).map { Sender("other \($0)") }
        let calls = Recorder<Int>()
        let tokens = others.enumerated().map { index, sender in
            hub.addObserver(for: name, object: sender) { _ in calls.append(index) }
        }
        let target = Sender("target")
        let targetToken = hub.addObserver(for: name, object: target) { _ in calls.append(-1) }

        hub.post(name, object: target, userInfo: 0)
        #expect(calls.elements == [-1])

        hub.post(name, object: others[4_242], userInfo: 0)
        #expect(calls.elements == [-1, 4_242])

        hub.post(name, object: Sender("unobserved"), userInfo: 0)
        #expect(calls.elements == [-1, 4_242])
        _ = (tokens, targetToken)
    }

    @Test(
        "with many senders on several names, each post reaches exactly its (name, sender) observers, in registration order"
    )
    func manySendersOnSeveralNames() {
        let other = NotificationName<Int>("test.sender.other")
        let senders = (0..<600).map { Sender("s\($0)") }
        let log = Recorder<String>()
        var tokens: [ObservationToken] = []
        tokens.append(hub.addObserver(for: name) { _ in log.append("any-first") })
        for (index, sender) in senders.enumerated() {
            tokens.append(hub.addObserver(for: name, object: sender) { _ in log.append("\(index)a") })
            tokens.append(hub.addObserver(for: other, object: sender) { _ in log.append("\(index)o") })
        }
        tokens.append(hub.addObserver(for: name) { _ in log.append("any-middle") })
        for (index, sender) in senders.enumerated() where index.isMultiple(of: 2) {
            tokens.append(hub.addObserver(for: name, object: sender) { _ in log.append("\(index)b") })
        }
        tokens.append(hub.addObserver(for: name) { _ in log.append("any-last") })

        for (index, sender) in senders.enumerated() {
            let before = log.count
            hub.post(name, object: sender, userInfo: index)
            let expected =
                index.isMultiple(of: 2)
                ? ["any-first", "\(index)a", "any-middle", "\(index)b", "any-last"]
                : ["any-first", "\(index)a", "any-middle", "any-last"]
            #expect(Array(log.elements[before...]) == expected)
            let beforeOther = log.count
            hub.post(other, object: sender, userInfo: index)
            #expect(Array(log.elements[beforeOther...]) == ["\(index)o"])
        }
        tokens.forEach { $0.cancel() }
    }

    @Test(
        "a dropped sender is not kept alive by its observers, and no new object takes its address while it is observed"
    )
    func droppedSenderStopsMatching() {
        let calls = Counter()
        var sender: Sender? = Sender("short-lived")
        weak let weakSender = sender
        let oldAddress = ObjectIdentifier(sender!)
        let token = hub.addObserver(for: name, object: sender) { _ in calls.increment() }
        hub.post(name, object: sender, userInfo: 1)
        #expect(calls.count == 1)

        sender = nil
        #expect(weakSender == nil, "observing a sender must not keep it alive")

        // malloc hands a freed block of the same size straight back; these would reuse the dead sender's
        // address if the observation had let its memory go.
        var successors: [Sender] = []
        for index in 0..<1_000 {
            let successor = Sender("successor \(index)")
            #expect(ObjectIdentifier(successor) != oldAddress)
            hub.post(name, object: successor, userInfo: 2)
            successors.append(successor)
        }
        hub.post(name, userInfo: 3)
        #expect(calls.count == 1)
        token.cancel()
        #expect(!hub.hasObservers(for: name))
    }

    @Test("posting with no sender reaches only observers of all senders")
    func nilSenderReachesOnlyUnfiltered() {
        let filtered = Counter()
        let unfiltered = Counter()
        let sender = Sender("s")
        let t1 = hub.addObserver(for: name, object: sender) { _ in filtered.increment() }
        let t2 = hub.addObserver(for: name) { _ in unfiltered.increment() }
        hub.post(name, userInfo: 0)
        #expect(filtered.count == 0)
        #expect(unfiltered.count == 1)
        _ = (t1, t2)
    }
}
