import Dispatch
import Foundation
@testable import Herald
import HeraldNotifications
import Testing

/// How work reaches a session's event queue: in the order it was handed over, and, from the completion queue's
/// run of one loop iteration's completions, together after the run.
@Suite("Hand-over to the event queue")
struct EventHandOverTests {
    private static func poster() -> SessionEventPoster {
        SessionEventPoster(center: NotificationHub(), sessionIdentifier: 1)
    }

    /// Waits for everything handed to `poster` so far to have run.
    private static func settle(_ poster: SessionEventPoster) -> Bool {
        let done = DispatchSemaphore(value: 0)
        poster.async { done.signal() }
        return done.wait(timeout: .now() + 10) == .success
    }

    @Test("work handed over during a hold waits for its end, then runs in the order it was handed over")
    func heldWorkRunsAfterTheHoldInOrder() {
        let poster = Self.poster()
        let log = Locked<[Int]>([])
        var seenDuringHold: [[Int]] = []
        poster.holdingWakeUps(over: Array(1...5), limit: .max) { item in
            poster.async { log.withLock { $0.append(item) } }
            seenDuringHold.append(log.withLock { $0 })
        }
        #expect(seenDuringHold == Array(repeating: [], count: 5))
        #expect(Self.settle(poster))
        #expect(log.withLock { $0 } == [1, 2, 3, 4, 5])
    }

    @Test("an item that ends past the limit lets the work before it go: the next item can wait for that work")
    func pastTheLimitLetsHeldWorkGo() {
        let poster = Self.poster()
        let firstRan = DispatchSemaphore(value: 0)
        var waited: DispatchTimeoutResult?
        poster.holdingWakeUps(over: [1, 2], limit: 0) { item in
            if item == 1 {
                poster.async { firstRan.signal() }
            } else {
                waited = firstRan.wait(timeout: .now() + 10)
            }
        }
        #expect(waited == .success)
    }

    @Test("another thread's work during a hold runs at once, after the work held before it")
    func anotherThreadsWorkLetsHeldWorkGo() {
        let poster = Self.poster()
        let log = Locked<[Int]>([])
        let otherRan = DispatchSemaphore(value: 0)
        var waited: DispatchTimeoutResult?
        poster.holdingWakeUps(over: [1], limit: .max) { item in
            poster.async { log.withLock { $0.append(item) } }
            Thread {
                poster.async {
                    log.withLock { $0.append(99) }
                    otherRan.signal()
                }
            }.start()
            waited = otherRan.wait(timeout: .now() + 10)
        }
        #expect(waited == .success)
        #expect(log.withLock { $0 } == [1, 99])
    }

    @Test("work from many threads at once runs exactly once each, every thread's in its own order")
    func manyThreads() {
        let poster = Self.poster()
        let log = Locked<[[Int]]>(Array(repeating: [], count: 8))
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<500 {
                poster.async { log.withLock { $0[thread].append(index) } }
            }
        }
        #expect(Self.settle(poster))
        #expect(log.withLock { $0 } == Array(repeating: Array(0..<500), count: 8))
    }
}
