import Dispatch
import Foundation
import HeraldNotifications
import HeraldTesting
import Synchronization
import Testing

/// Checks that one observer received every poster's notifications in that poster's order.
///
/// One lock per poster, so that checking does not serialise the posters the test is trying to race.
private final class OrderChecker: Sendable {
    private struct Slot {
        var last = -1
        var received = 0
        var outOfOrder = 0
    }

    private let slots: [Guarded<Slot>]
    private let remaining: Atomic<Int>
    /// Gets one element once every poster's notifications all arrived.
    let complete = Recorder<Void>()

    /// - Parameter expected: How many notifications each counted poster sends; `nil` when the observer
    ///   is cancelled part-way and only order is checked.
    init(posters: Int, expected: Int?) {
        slots = (0..<posters).map { _ in Guarded(Slot()) }
        remaining = Atomic(expected.map { $0 * posters } ?? -1)
    }

    func record(_ step: Step) {
        guard step.poster < slots.count else { return }  // Another thread's marker, not a poster's.
        slots[step.poster].withLock { slot in
            if step.sequence <= slot.last { slot.outOfOrder += 1 }
            slot.last = step.sequence
            slot.received += 1
        }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { complete.append(()) }
    }

    var outOfOrder: Int { slots.reduce(0) { $0 + $1.withLock { $0.outOfOrder } } }
    var received: Int { slots.reduce(0) { $0 + $1.withLock { $0.received } } }
    func last(of poster: Int) -> Int { slots[poster].withLock { $0.last } }
}

@Suite("Concurrency stress")
struct StressTests {
    @Test(
        "8 threads posting 100,000 notifications each while 2 threads add and cancel observers: no crash, no deadlock, every remaining observer gets everything in each poster's order"
    )
    func manyPostersWithChurn() async {
        let hub = NotificationHub()
        let name = NotificationName<Step>("test.stress.step")
        let posters = 8
        let perPoster = 100_000
        let churners = 2
        let senders = (0..<posters).map { Sender("poster \($0)") }

        let all = OrderChecker(posters: posters, expected: perPoster)
        let queued = OrderChecker(posters: posters, expected: perPoster)
        let ofPosterZero = OrderChecker(posters: 1, expected: perPoster)
        let stable = [
            hub.addObserver(for: name) { all.record($0.userInfo) },
            hub.addObserver(for: name, delivery: .queue(.global())) { queued.record($0.userInfo) },
            hub.addObserver(for: name, object: senders[0]) { ofPosterZero.record($0.userInfo) },
        ]

        let running = Atomic<Int>(posters)
        let finished = Recorder<String>()
        let churnProblems = Recorder<String>()
        let churnCycles = Counter()

        for churner in 0..<churners {
            startThread(named: "churner \(churner)") {
                // Each cycle registers an observer, proves the registration took effect with a marker
                // post from this thread, cancels it, and proves the cancel took effect the same way.
                let markerPoster = 100 + churner
                var marker = 0
                while running.load(ordering: .acquiring) > 0 {
                    let seen = Atomic<Int>(-1)
                    let order = OrderChecker(posters: posters, expected: nil)
                    let delivery: NotificationDelivery = marker % 3 == 0 ? .queue(.global()) : .posting
                    let sender: Sender? = marker % 5 == 0 ? senders[marker % posters] : nil
                    let token = hub.addObserver(for: name, object: sender, delivery: delivery) { note in
                        if note.userInfo.poster == markerPoster {
                            seen.store(note.userInfo.sequence, ordering: .releasing)
                        } else {
                            order.record(note.userInfo)
                        }
                    }
                    if case .posting = delivery, sender == nil {
                        hub.post(name, userInfo: Step(poster: markerPoster, sequence: marker))
                        if seen.load(ordering: .acquiring) != marker { churnProblems.append("lost registration") }
                        token.cancel()
                        hub.post(name, userInfo: Step(poster: markerPoster, sequence: marker + 1))
                        if seen.load(ordering: .acquiring) != marker { churnProblems.append("called after cancel") }
                    } else if marker % 2 == 0 {
                        token.cancel()
                    }  // else: dropping the token at the end of this iteration cancels it.
                    if order.outOfOrder != 0 { churnProblems.append("out of order") }
                    marker += 2
                    churnCycles.increment()
                }
                finished.append("churner \(churner)")
            }
        }
        for poster in 0..<posters {
            startThread(named: "poster \(poster)") {
                for sequence in 0..<perPoster {
                    hub.post(name, object: senders[poster], userInfo: Step(poster: poster, sequence: sequence))
                }
                running.subtract(1, ordering: .releasing)
                finished.append("poster \(poster)")
            }
        }

        #expect(await finished.wait(forCount: posters + churners, timeout: .seconds(120)), "deadlock?")
        #expect(await all.complete.wait(forCount: 1, timeout: .seconds(30)))
        #expect(await queued.complete.wait(forCount: 1, timeout: .seconds(30)))
        #expect(await ofPosterZero.complete.wait(forCount: 1, timeout: .seconds(30)))
        for checker in [all, queued] {
            #expect(checker.received == posters * perPoster)
            #expect(checker.outOfOrder == 0)
            for poster in 0..<posters { #expect(checker.last(of: poster) == perPoster - 1) }
        }
        #expect(ofPosterZero.received == perPoster)
        #expect(ofPosterZero.outOfOrder == 0)
        #expect(churnProblems.elements.prefix(10) == [])
        #expect(churnCycles.count > 0)
        _ = stable
    }
}

/// A counter one thread writes and others read, for the posting watermarks of the churn test.
private final class Watermark: Sendable {
    let value = Atomic<Int>(-1)
    init() {}
    func load() -> Int { value.load(ordering: .sequentiallyConsistent) }
    func store(_ newValue: Int) { value.store(newValue, ordering: .sequentiallyConsistent) }
}

/// What one short-lived observation received, checked once everything has settled.
private final class ChurnProbe: Sendable {
    struct Slot {
        var first = -1
        var last = -1
        var received = 0
        var outOfOrder = 0
    }

    let delivery: String
    let sender: Int?
    private let slots: [Guarded<Slot>]
    /// Per poster: the sequence number whose post had started when `addObserver` returned.
    let addedAt: Guarded<[Int]>
    /// Per poster: the sequence number whose post had returned before `cancel()` was called.
    let completedBeforeCancel: Guarded<[Int]>
    /// Per poster: the sequence number whose post had started when `cancel()` returned. A later one must never
    /// be delivered.
    let startedAtCancel: Guarded<[Int]>

    init(posters: Int, delivery: String, sender: Int?) {
        self.delivery = delivery
        self.sender = sender
        slots = (0..<posters).map { _ in Guarded(Slot()) }
        addedAt = Guarded([])
        completedBeforeCancel = Guarded([])
        startedAtCancel = Guarded([])
    }

    func record(_ step: Step) {
        slots[step.poster].withLock { slot in
            if step.sequence <= slot.last { slot.outOfOrder += 1 }
            if slot.first < 0 { slot.first = step.sequence }
            slot.last = step.sequence
            slot.received += 1
        }
    }

    var received: Int { slots.reduce(0) { $0 + $1.withLock { $0.received } } }

    /// The contract violations this observation saw, as readable strings.
    func problems() -> [String] {
        let added = addedAt.withLock { $0 }
        let completed = completedBeforeCancel.withLock { $0 }
        let cancelled = startedAtCancel.withLock { $0 }
        var problems: [String] = []
        for (poster, guarded) in slots.enumerated() {
            let slot = guarded.withLock { $0 }
            let label = "\(delivery) observer, poster \(poster)"
            if slot.outOfOrder > 0 { problems.append("\(label): \(slot.outOfOrder) out of order") }
            if let sender, sender != poster, slot.received > 0 {
                problems.append("\(label): received \(slot.received) posts of another sender")
            }
            guard slot.received > 0 else {
                if delivery == "posting", sender == nil || sender == poster, completed[poster] > added[poster] {
                    problems.append(
                        "\(label): lost registration (nothing of \(added[poster] + 1)...\(completed[poster]))")
                }
                continue
            }
            // Contract (ObservationToken.cancel()): after cancel() returns, the handler is not entered again.
            if slot.last > cancelled[poster] {
                problems.append("\(label): received #\(slot.last) after cancel returned at #\(cancelled[poster])")
            }
            // No gap: whatever was delivered is one contiguous run of this poster's posts.
            if slot.last - slot.first + 1 != slot.received {
                problems.append("\(label): gap (\(slot.received) posts between #\(slot.first) and #\(slot.last))")
            }
            // Synchronous delivery loses nothing between the registration and the cancel.
            if delivery == "posting", sender == nil || sender == poster, completed[poster] > added[poster],
                slot.first > added[poster] + 1 || slot.last < completed[poster]
            {
                problems.append(
                    "\(label): got #\(slot.first)...#\(slot.last), expected at least "
                        + "#\(added[poster] + 1)...#\(completed[poster])")
            }
        }
        return problems
    }
}

extension StressTests {
    @Test(
        "1,000,000 posts from 8 threads while 4 threads add and cancel observers: nothing after cancel, FIFO per poster, counts add up"
    )
    func millionPostsUnderChurn() async {
        let hub = NotificationHub()
        let name = NotificationName<Step>("test.stress.churn")
        let posters = 8
        let perPoster = 125_000
        let churners = 4
        // HERALD_STRESS_SEED=<seed> replays a failing run's choices.
        let seed =
            ProcessInfo.processInfo.environment["HERALD_STRESS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let senders = (0..<posters).map { Sender("poster \($0)") }
        let started = (0..<posters).map { _ in Watermark() }
        let completed = (0..<posters).map { _ in Watermark() }
        let churnQueue = DispatchQueue(label: "test.stress.churn", attributes: .concurrent)

        let stable = OrderChecker(posters: posters, expected: perPoster)
        let stableToken = hub.addObserver(for: name) { stable.record($0.userInfo) }
        let postersRunning = Atomic<Int>(posters)
        let finished = Recorder<String>()
        let probes = Guarded<[ChurnProbe]>([])

        for churner in 0..<churners {
            startThread(named: "churner \(churner)") {
                var random = SeededGenerator(seed: seed &+ UInt64(churner))
                var mine: [ChurnProbe] = []
                while postersRunning.load(ordering: .acquiring) > 0 {
                    let queued = random.next() % 3 == 0
                    let sender = random.next() % 4 == 0 ? Int(random.next() % UInt64(posters)) : nil
                    let probe = ChurnProbe(posters: posters, delivery: queued ? "queue" : "posting", sender: sender)
                    let token = hub.addObserver(
                        for: name, object: sender.map { senders[$0] },
                        delivery: queued ? .queue(churnQueue) : .posting
                    ) { probe.record($0.userInfo) }
                    probe.addedAt.withLock { $0 = started.map { $0.load() } }
                    // Stay registered while a random number of posts complete (or the posters finish).
                    let wait = Int(random.next() % 1_000)
                    let target = completed.reduce(0) { $0 + $1.load() } + wait
                    while completed.reduce(0, { $0 + $1.load() }) < target,
                        postersRunning.load(ordering: .acquiring) > 0
                    {
                        sched_yield()
                    }
                    probe.completedBeforeCancel.withLock { $0 = completed.map { $0.load() } }
                    token.cancel()
                    probe.startedAtCancel.withLock { $0 = started.map { $0.load() } }
                    mine.append(probe)
                }
                probes.withLock { $0.append(contentsOf: mine) }
                finished.append("churner \(churner)")
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for poster in 0..<posters {
            startThread(named: "poster \(poster)") {
                for sequence in 0..<perPoster {
                    started[poster].store(sequence)
                    hub.post(name, object: senders[poster], userInfo: Step(poster: poster, sequence: sequence))
                    completed[poster].store(sequence)
                }
                postersRunning.subtract(1, ordering: .releasing)
                finished.append("poster \(poster)")
            }
        }

        let allFinished = await finished.wait(forCount: posters + churners, timeout: .seconds(300))
        let elapsed = clock.now - start
        #expect(allFinished, "deadlock? seed \(seed)")
        // Every queued delivery was submitted before this barrier, so afterwards none is pending or running.
        churnQueue.sync(flags: .barrier) {}
        stableToken.cancel()

        let all = probes.withLock { $0 }
        let churnDeliveries = all.reduce(0) { $0 + $1.received }
        let (seconds, attoseconds) = elapsed.components
        let wall = Double(seconds) + Double(attoseconds) / 1e18
        let total = posters * perPoster
        print(
            "CHURN posts=\(total) posters=\(posters) observations-added-and-cancelled=\(all.count) "
                + "churn-deliveries=\(churnDeliveries) duration=\(String(format: "%.2f", wall)) s "
                + "posts/s=\(Int(Double(total) / wall)) seed=\(seed)")
        #expect(stable.received == total, "seed \(seed)")
        #expect(stable.outOfOrder == 0, "seed \(seed)")
        for poster in 0..<posters { #expect(stable.last(of: poster) == perPoster - 1, "seed \(seed)") }
        #expect(all.count > churners, "the churners hardly ran; seed \(seed)")
        let problems = all.flatMap { $0.problems() }
        #expect(problems.prefix(10) == [], "\(problems.count) problems; seed \(seed)")
    }
}
