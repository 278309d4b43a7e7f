import Dispatch
import Foundation
import HeraldNotifications
import Testing

@testable import Herald
@testable import HeraldEngine

/// Commands handed to an engine from other threads wake its loop: none is lost, and each thread's run in
/// the order it sent them.
@Suite("Engine wake-ups", .timeLimit(.minutes(1)))
struct EngineWakeupTests {
    @Test("commands from four threads, sent in bursts and one at a time, all run on the loop thread in order")
    func everyCommandRuns() async throws {
        let engine = Engine(name: "herald.engine.wakeup-test")
        let perThread = 5_000
        let ran = Locked<[[Int]]>(Array(repeating: [], count: 4))
        let offLoopThread = Locked(0)
        let done = DispatchSemaphore(value: 0)
        for thread in 0..<4 {
            Thread {
                for value in 0..<perThread {
                    engine.execute {
                        if !engine.isOnLoopThread { offLoopThread.withLock { $0 += 1 } }
                        let finished = ran.withLock { ran in
                            ran[thread].append(value)
                            return ran.allSatisfy { $0.count == perThread }
                        }
                        if finished { done.signal() }
                    }
                    // Now and then wait for the loop to catch up, so that it goes back to sleep and the
                    // next command has to wake it.
                    if value % 1_000 == 999 {
                        let caughtUp = DispatchSemaphore(value: 0)
                        engine.execute { caughtUp.signal() }
                        caughtUp.wait()
                    }
                }
            }.start()
        }
        let finished = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: done.wait(timeout: .now() + 30) == .success)
            }
        }
        #expect(finished)
        let result = ran.withLock { $0 }
        for thread in 0..<4 {
            #expect(result[thread] == Array(0..<perThread))
        }
        #expect(offLoopThread.withLock { $0 } == 0)
    }

    @Test("a command sent while the loop sleeps wakes it, every time")
    func wakesAnIdleLoop() async throws {
        let engine = Engine(name: "herald.engine.idle-wakeup-test")
        for round in 0..<200 {
            let value = await withCheckedContinuation { continuation in
                engine.execute { continuation.resume(returning: round) }
            }
            #expect(value == round)
        }
    }
}
