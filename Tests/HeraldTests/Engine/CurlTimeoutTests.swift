import Dispatch
import Foundation
import HeraldNotifications
import Testing

@testable import HeraldEngine

/// curl's timeout on the loop: "at once" waits for the loop's next pass, so a libcurl that asks for 0 ms from
/// every timeout never holds the loop in its timers, and each new request for a timeout replaces the last.
@Suite("curl's timeout on the loop", .timeLimit(.minutes(1)))
struct CurlTimeoutTests {
    /// Runs `body` on a new engine's loop thread with a started timeout whose firings it counts; `body` ends
    /// with `finish`, which closes the timeout and returns the count from this function at the end of the
    /// loop's next pass (the pass in which a timeout asked for at once fires).
    private func firings(
        _ body: @escaping @Sendable (CurlTimeout, _ finish: @escaping @Sendable () -> Void) -> Void
    ) async -> Int {
        let engine = Engine(name: "herald.engine.curl-timeout-test")
        return await withCheckedContinuation { continuation in
            engine.execute {
                let fired = Locked(0)
                let timeout = CurlTimeout()
                timeout.start(on: engine.uvLoop) { fired.withLock { $0 += 1 } }
                body(timeout) {
                    // The end of this pass, then of the next.
                    engine.atIterationEnd {
                        engine.atIterationEnd {
                            timeout.close()
                            continuation.resume(returning: fired.withLock { $0 })
                        }
                    }
                }
            }
        }
    }

    @Test("a timeout asked for at once from inside its own firing lets the loop take a command in between")
    func zeroFromTheFiringWaitsForTheNextPass() async {
        let limit = 10_000
        let engine = Engine(name: "herald.engine.curl-timeout-test")
        let firingsBeforeCommand = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            engine.execute {
                let firings = Locked(0)
                let timeout = CurlTimeout()
                // Alive until the command below closes it.
                let kept = Locked<CurlTimeout?>(timeout)
                timeout.start(on: engine.uvLoop) { [unowned timeout] in
                    let count = firings.withLock { count in
                        count += 1
                        return count
                    }
                    if count == 1 {
                        // Taken from the loop's queue when it next polls: how many firings came before it.
                        engine.execute {
                            timeout.close()
                            kept.withLock { $0 = nil }
                            continuation.resume(returning: firings.withLock { $0 })
                        }
                    }
                    // As a libcurl with work ready at once would: every firing asks for another at once.
                    if count < limit { timeout.schedule(0) }
                }
                timeout.schedule(0)
            }
        }
        // Were the timeout a libuv timer started with 0 ms, libuv 1.44 would run it again in the same pass,
        // and the command would wait for all 10,000 firings.
        #expect(firingsBeforeCommand < 4, "\(firingsBeforeCommand) firings before the loop took a command")
    }

    @Test("a timeout asked for at once fires once, in the loop's next pass")
    func zeroFiresOnce() async {
        let fired = await firings { timeout, finish in
            timeout.schedule(0)
            finish()
        }
        #expect(fired == 1)
    }

    @Test("asking for no timeout, or a later one, after one at once takes the one at once back")
    func laterRequestsReplaceAtOnce() async {
        for replacement in [-1, 60_000] {
            let fired = await firings { timeout, finish in
                timeout.schedule(0)
                timeout.schedule(replacement)
                finish()
            }
            #expect(fired == 0, "replaced by \(replacement) ms")
        }
    }

    @Test("asking for a timeout at once after a later one takes the later one back")
    func atOnceReplacesLater() async {
        let fired = await firings { timeout, finish in
            timeout.schedule(60_000)
            timeout.schedule(0)
            finish()
        }
        #expect(fired == 1)
    }

    @Test("a timeout in milliseconds doesn't fire at once, then fires once")
    func delayedTimeoutFires() async {
        let engine = Engine(name: "herald.engine.curl-timeout-test")
        let (atOnce, later) = await withCheckedContinuation {
            (continuation: CheckedContinuation<(Int, Int), Never>) in
            engine.execute {
                let fired = Locked(0)
                let firedTwoPassesIn = Locked(-1)
                let timeout = CurlTimeout()
                timeout.start(on: engine.uvLoop) {
                    fired.withLock { $0 += 1 }
                    // A pass later: a firing that came twice would be counted.
                    engine.atIterationEnd {
                        timeout.close()
                        continuation.resume(returning: (firedTwoPassesIn.withLock { $0 }, fired.withLock { $0 }))
                    }
                }
                // Long enough that no pass of a loaded machine reaches it before the two checked.
                timeout.schedule(2_000)
                engine.atIterationEnd {
                    engine.atIterationEnd { firedTwoPassesIn.withLock { $0 = fired.withLock { $0 } } }
                }
            }
        }
        #expect(atOnce == 0)
        #expect(later == 1)
    }
}
