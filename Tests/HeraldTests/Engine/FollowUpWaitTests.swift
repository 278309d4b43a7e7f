import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// The loop thread waits awake for a follow-up request only after the engine's last running transfer is
/// handed over alone, and never for long.
@Suite("Waiting for a follow-up request", .timeLimit(.minutes(1)))
struct FollowUpWaitTests {
    @Test("a lone transfer's hand-over starts a wait that a started transfer ends")
    func loneTransferWaits() {
        var wait = FollowUpWait()
        wait.transferStarted()
        wait.transferEnded()
        #expect(wait.step { $0.handedOver(at: 1_000) })
        #expect(wait.isWaiting)
        #expect(wait.deadline == 1_000 + FollowUpWait.duration)
        // A command that starts nothing (a cancellation, a closure) leaves the wait running.
        #expect(!wait.step { $0.commandsRan(at: 1_500) })
        #expect(wait.isWaiting)
        wait.transferStarted()
        #expect(wait.step { $0.commandsRan(at: 1_500) })
        #expect(!wait.isWaiting)
        #expect(wait.waitsStarted == 1)
        #expect(wait.waitsAnswered == 1)
    }

    @Test("the wait ends at its deadline, not before")
    func deadlineEndsTheWait() {
        var wait = FollowUpWait()
        wait.transferStarted()
        wait.transferEnded()
        #expect(wait.step { $0.handedOver(at: 0) })
        #expect(!wait.step { $0.turned(at: FollowUpWait.duration - 1) })
        #expect(wait.isWaiting)
        #expect(wait.step { $0.turned(at: FollowUpWait.duration) })
        #expect(!wait.isWaiting)
        // Ended, a later turn changes nothing.
        #expect(!wait.step { $0.turned(at: FollowUpWait.duration * 2) })
        #expect(wait.waitsAnswered == 0)
    }

    @Test("a wait that runs out turns waiting off until a follow-up comes within the wait's duration")
    func expiredWaitBacksOff() {
        var wait = FollowUpWait()
        wait.transferStarted()
        wait.transferEnded()
        #expect(wait.step { $0.handedOver(at: 0) })
        #expect(wait.step { $0.turned(at: FollowUpWait.duration) })
        // The program paused: the next lone hand-over doesn't wait.
        wait.transferStarted()
        #expect(!wait.step { $0.commandsRan(at: 10 * FollowUpWait.duration) })
        wait.transferEnded()
        let declinedAt = 20 * FollowUpWait.duration
        #expect(!wait.step { $0.handedOver(at: declinedAt) })
        // Its follow-up came late: still off.
        wait.transferStarted()
        #expect(!wait.step { $0.commandsRan(at: declinedAt + FollowUpWait.duration + 1) })
        wait.transferEnded()
        #expect(!wait.step { $0.handedOver(at: 30 * FollowUpWait.duration) })
        // This one's came soon: waiting is back on.
        wait.transferStarted()
        #expect(!wait.step { $0.commandsRan(at: 30 * FollowUpWait.duration + 1_000) })
        wait.transferEnded()
        #expect(wait.step { $0.handedOver(at: 40 * FollowUpWait.duration) })
        #expect(wait.waitsStarted == 2)
    }

    @Test("no wait while another transfer runs, after several end together, or with nothing ended")
    func noWaitOtherwise() {
        var wait = FollowUpWait()
        // Two running, one ends: the loop has the other's I/O to wait for.
        wait.transferStarted()
        wait.transferStarted()
        wait.transferEnded()
        #expect(!wait.step { $0.handedOver(at: 0) })
        // The other ends in a later iteration, alone and last: that one waits.
        wait.transferEnded()
        #expect(wait.step { $0.handedOver(at: 10) })
        wait.transferStarted()
        #expect(wait.step { $0.commandsRan(at: 1_500) })
        // A burst ending in one iteration: its handlers run first, so no wait.
        wait.transferStarted()
        wait.transferStarted()
        wait.transferEnded()
        wait.transferEnded()
        wait.transferEnded()
        #expect(wait.transfersRunning == 0)
        #expect(!wait.step { $0.handedOver(at: 20) })
        // A hand-over with no transfer ended since the last (a response head, a progress report).
        #expect(!wait.step { $0.handedOver(at: 30) })
        #expect(wait.waitsStarted == 1)
    }

    @Test("one request at a time: the first hand-over waits, and every wait ends once")
    func sequentialRequestsWait() async throws {
        let server = try await TestServer.start()
        let engine = Engine(name: "herald.engine.follow-up-test")
        let session = SessionManager(
            configuration: .default, notificationCenter: NotificationHub(), completionQueue: nil,
            completionGroup: nil, engine: engine)
        let count = 10
        let ended = Locked<[Bool]>([])
        await engine.run {
            engine.followUpWaitEnded = { answered in ended.withLock { $0.append(answered) } }
        }
        for _ in 0..<count {
            let (body, response) = try await session.data(for: Request(url: server.url("/json")))
            #expect(response.statusCode == 200)
            #expect(!body.isEmpty)
        }
        // A wait still running after the last request ends at its deadline: nothing follows it.
        let lastEnded = OneShot<Bool>()
        await engine.run {
            guard engine.followUp.isWaiting else { return lastEnded.send(true) }
            engine.followUpWaitEnded = { answered in
                ended.withLock { $0.append(answered) }
                lastEnded.send(!answered)
            }
        }
        #expect(try await lastEnded.value(timeout: .seconds(10)))
        let counts = await engine.run { (engine.followUp.waitsStarted, engine.followUp.waitsAnswered) }
        // The first lone hand-over waits (waiting starts on); a wait that runs out turns it off for a while,
        // so how many more depends on how fast the follow-ups came. Each ended exactly once.
        #expect(counts.0 >= 1)
        #expect(counts.0 <= count)
        #expect(ended.withLock { $0.count } == counts.0)
        #expect(counts.1 == ended.withLock { $0.filter { $0 }.count })
        #expect(await engine.run { engine.followUp.isWaiting } == false)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

}

extension FollowUpWait {
    /// Applies a mutating call and returns its result, so that `#expect` can check it.
    fileprivate mutating func step(_ call: (inout FollowUpWait) -> Bool) -> Bool { call(&self) }
}

extension Engine {
    /// Runs `body` on the loop thread and returns its result.
    fileprivate func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            execute { continuation.resume(returning: body()) }
        }
    }
}
