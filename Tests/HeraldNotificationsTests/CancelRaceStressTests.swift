import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import Testing

/// One observer of a round: its handler tells whether it was entered after `cancel()` returned.
private final class Probe: Sendable {
    /// Set by the canceller right after `cancel()` returned.
    let cancelReturned = Atomic<Bool>(false)
    /// Handler entries seen after `cancelReturned` was set.
    let lateEntries = Atomic<Int>(0)
    let entries = Atomic<Int>(0)

    /// The handler's first instruction: any entry after `cancel()` returned is a violation.
    func enter() {
        if cancelReturned.load(ordering: .sequentiallyConsistent) {
            lateEntries.wrappingAdd(1, ordering: .relaxed)
        }
        entries.wrappingAdd(1, ordering: .relaxed)
    }
}

/// A round's poster: posts until told to stop.
private final class Poster: Sendable {
    let posts = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
}

/// What a run of rounds found.
private struct CancelRaceResult: Sendable {
    var roundsWithLateEntries = 0
    var lateEntries = 0
    var entries = 0
}

/// Threads that keep both cores busy, so that the poster and the canceller get preempted at any point.
private final class CPUBurners: Sendable {
    private let stop = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let count: Int

    init(count: Int) {
        self.count = count
        for index in 0..<count {
            startThread(named: "burner \(index)") { [self] in
                var x: UInt64 = 0x9E37_79B9_7F4A_7C15
                while !stop.load(ordering: .relaxed) {
                    for _ in 0..<1_000 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
                }
                withExtendedLifetime(x) {}
                stopped.signal()
            }
        }
    }

    func finish() {
        stop.store(true, ordering: .relaxed)
        for _ in 0..<count { stopped.wait() }
    }
}

/// Spins (yielding) until `condition` holds.
private func spin(until condition: () -> Bool) {
    while !condition() { sched_yield() }
}

/// Runs `rounds` rounds of: a thread posts continuously to four observers; this thread waits until
/// handlers are being entered, then for each observer in turn cancels its token and sets that observer's
/// flag, lets 20 more posts happen, and stops the poster. Each handler counts the entries that
/// saw its flag set.
private func cancelWhilePosting(rounds: Int, queued: Bool) -> CancelRaceResult {
    let name = NotificationName<Int>("test.cancel-race.event")
    var result = CancelRaceResult()
    for round in 0..<rounds {
        let hub = NotificationHub()
        let poster = Poster()
        let queue = DispatchQueue(label: "test.cancel-race.\(round)", attributes: .concurrent)
        let probes = (0..<4).map { _ in Probe() }
        let tokens = probes.map { probe in
            hub.addObserver(for: name, delivery: queued ? .queue(queue) : .posting) { _ in probe.enter() }
        }
        startThread(named: "poster") {
            var value = 0
            while !poster.stop.load(ordering: .relaxed) {
                hub.post(name, userInfo: value)
                value += 1
                poster.posts.wrappingAdd(1, ordering: .relaxed)
            }
            poster.done.signal()
        }
        // Cancel while deliveries are under way: after a number of entries that varies with the round.
        spin { probes[3].entries.load(ordering: .relaxed) >= 1 + round % 7 }
        for (token, probe) in zip(tokens, probes) {
            token.cancel()
            probe.cancelReturned.store(true, ordering: .sequentiallyConsistent)
        }
        let postsAtCancel = poster.posts.load(ordering: .relaxed)
        spin { poster.posts.load(ordering: .relaxed) >= postsAtCancel + 20 }
        poster.stop.store(true, ordering: .relaxed)
        poster.done.wait()
        queue.sync(flags: .barrier) {}  // Whatever the observations scheduled has run.
        let late = probes.reduce(0) { $0 + $1.lateEntries.load(ordering: .relaxed) }
        result.lateEntries += late
        if late > 0 { result.roundsWithLateEntries += 1 }
        result.entries += probes.reduce(0) { $0 + $1.entries.load(ordering: .relaxed) }
    }
    return result
}

/// Named `…StressTests` so that `make test` runs it with the other stress suites, in a process of its own:
/// its CPU burners would starve the timeouts of suites running beside it.
@Suite("Cancelling while another thread posts", .serialized)
struct CancelRaceStressTests {
    /// Runs the rounds on a thread of their own (they block), beside two CPU-burning threads.
    private func run(rounds: Int, queued: Bool) async -> CancelRaceResult {
        let burners = CPUBurners(count: 2)
        let result = await withCheckedContinuation { continuation in
            startThread(named: "canceller") {
                continuation.resume(returning: cancelWhilePosting(rounds: rounds, queued: queued))
            }
        }
        burners.finish()
        return result
    }

    @Test(
        ".posting: after cancel() returns, the handler is never entered again (500 rounds of 4 cancels, 2 CPU burners)")
    func postingDelivery() async {
        let result = await run(rounds: 500, queued: false)
        #expect(result.entries >= 500 * 4)
        #expect(result.roundsWithLateEntries == 0, "late entries: \(result.lateEntries)")
    }

    @Test(".queue: after cancel() returns, the handler is never entered again (500 rounds of 4 cancels, 2 CPU burners)")
    func queueDelivery() async {
        let result = await run(rounds: 500, queued: true)
        #expect(result.entries >= 500 * 4)
        #expect(result.roundsWithLateEntries == 0, "late entries: \(result.lateEntries)")
    }
}
