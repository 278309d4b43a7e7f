import Dispatch
import HeraldNotifications
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
