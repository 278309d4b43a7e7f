@testable import Herald
import Synchronization
import Testing

/// The session's lifecycle, driven alone: no engine, no thread, no notification.
@Suite("SessionStateMachine")
struct SessionStateMachineTests {
    @Test("active: accepts tasks; tasks leaving change nothing; a waiter waits")
    func active() {
        var machine = SessionStateMachine()
        #expect(machine.acceptsTasks)
        #expect(!machine.isInvalidated)
        #expect(!machine.hasFinishedInvalidating)
        #expect(machine.invalidationMode == nil)
        let answer1 = machine.tasksRemaining(0)
        #expect(!answer1)
        let answer2 = machine.whenAnnounced {}
        #expect(!answer2)
        #expect(machine.acceptsTasks)
    }

    @Test("active → invalidating(finishing) → invalidating(cancelling), never back")
    func invalidating() {
        var machine = SessionStateMachine()
        let answer3 = machine.invalidate(cancellingTasks: false)
        #expect(!answer3)
        #expect(!machine.acceptsTasks)
        #expect(machine.isInvalidated)
        #expect(!machine.hasFinishedInvalidating)
        #expect(machine.invalidationMode == .finishingTasks)
        // A second call that cancels: what is outstanding is cancelled, and the mode says so.
        let answer4 = machine.invalidate(cancellingTasks: true)
        #expect(answer4)
        #expect(machine.invalidationMode == .cancellingTasks)
        // One that lets them finish doesn't undo it.
        let answer5 = machine.invalidate(cancellingTasks: false)
        #expect(!answer5)
        #expect(machine.invalidationMode == .cancellingTasks)
    }

    @Test("invalidating waits for the last task, then closes exactly once; the waiters hear the announcement")
    func closingAndAnnounced() {
        let calls = Atomic<Int>(0)
        var machine = SessionStateMachine()
        let answer6 = machine.whenAnnounced { calls.add(1, ordering: .relaxed) }
        #expect(!answer6)
        _ = machine.invalidate(cancellingTasks: true)
        let answer7 = machine.whenAnnounced { calls.add(10, ordering: .relaxed) }
        #expect(!answer7)
        let answer8 = machine.tasksRemaining(2)
        #expect(!answer8)
        #expect(!machine.hasFinishedInvalidating)
        let answer9 = machine.tasksRemaining(0)
        #expect(answer9)
        #expect(machine.hasFinishedInvalidating)
        #expect(machine.invalidationMode == nil)
        let answer10 = machine.tasksRemaining(0)
        #expect(!answer10, "closing happens once")
        let answer11 = machine.whenAnnounced { calls.add(100, ordering: .relaxed) }
        #expect(!answer11)
        let waiters = machine.announced()
        #expect(waiters.count == 3)
        for waiter in waiters { waiter() }
        #expect(calls.load(ordering: .relaxed) == 111)
        // Announced: a late waiter is told to act at once, and nothing changes any more.
        let answer12 = machine.whenAnnounced {}
        #expect(answer12)
        let answer13 = machine.tasksRemaining(0)
        #expect(!answer13)
        let answer14 = machine.invalidate(cancellingTasks: false)
        #expect(!answer14)
        #expect(machine.hasFinishedInvalidating)
        #expect(!machine.acceptsTasks)
    }
}
