@testable import Herald
import Synchronization
import Testing

/// The session's lifecycle and task registry, driven alone: no engine, no thread, no notification.
@Suite("SessionStateMachine")
struct SessionStateMachineTests {
    /// A task as the machine knows it: an object.
    final class FakeTask {}

    typealias Machine = SessionStateMachine<FakeTask>

    /// An action's case name, without its data.
    static func name(_ action: Any) -> String {
        String(String(describing: action).prefix { $0 != "(" })
    }

    /// Makes and lists a task; returns it with its identifier.
    static func list(in machine: inout Machine) -> (FakeTask, Int) {
        guard case .make(let identifier) = machine.taskRequested() else {
            Issue.record("expected .make")
            return (FakeTask(), 0)
        }
        let task = FakeTask()
        #expect(Self.name(machine.taskMade(task, identifier: identifier)) == "listed")
        return (task, identifier)
    }

    /// Every state of the machine, as a test reaches it.
    enum Situation: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
        case active, finishingTasks, cancellingTasks, closing, invalidated
        var testDescription: String { rawValue }
    }

    /// A machine in `situation`; invalidating ones still list one task.
    static func machine(in situation: Situation) -> Machine {
        var machine = Machine()
        switch situation {
        case .active:
            break
        case .finishingTasks:
            _ = list(in: &machine)
            _ = machine.invalidate(cancellingTasks: false)
        case .cancellingTasks:
            _ = list(in: &machine)
            _ = machine.invalidate(cancellingTasks: true)
        case .closing:
            _ = machine.invalidate(cancellingTasks: false)
        case .invalidated:
            _ = machine.invalidate(cancellingTasks: false)
            _ = machine.announced()
        }
        return machine
    }

    @Test("the reads in every state", arguments: Situation.allCases)
    func reads(_ situation: Situation) {
        let machine = Self.machine(in: situation)
        #expect(machine.acceptsTasks == (situation == .active))
        #expect(machine.isInvalidated == (situation != .active))
        #expect(machine.hasFinishedInvalidating == (situation == .closing || situation == .invalidated))
        let mode: Machine.Mode? =
            switch situation {
            case .finishingTasks: .finishingTasks
            case .cancellingTasks: .cancellingTasks
            default: nil
            }
        #expect(machine.invalidationMode == mode)
    }

    @Test("taskRequested and taskMade: only an active session makes and lists tasks", arguments: Situation.allCases)
    func making(_ situation: Situation) {
        var machine = Self.machine(in: situation)
        let requested = machine.taskRequested()
        #expect(Self.name(requested) == (situation == .active ? "make" : "refuse"))
        let listed = machine.taskMade(FakeTask(), identifier: 99)
        #expect(Self.name(listed) == (situation == .active ? "listed" : "refuse"))
    }

    @Test("invalidate(cancellingTasks:) in every state", arguments: Situation.allCases)
    func invalidateEverywhere(_ situation: Situation) {
        var finishing = Self.machine(in: situation)
        var cancelling = Self.machine(in: situation)
        let listed = situation == .finishingTasks || situation == .cancellingTasks
        // A second call that lets tasks finish does nothing; one that cancels cancels what is listed.
        let expectedFinishing: String = situation == .active ? "close" : "none"
        let expectedCancelling: String = situation == .active ? "close" : (listed ? "cancel" : "none")
        #expect(Self.name(finishing.invalidate(cancellingTasks: false)) == expectedFinishing)
        let action = cancelling.invalidate(cancellingTasks: true)
        #expect(Self.name(action) == expectedCancelling)
        if case .cancel(let tasks) = action { #expect(tasks.count == 1) }
        if listed {
            #expect(finishing.invalidationMode == (situation == .finishingTasks ? .finishingTasks : .cancellingTasks))
            #expect(cancelling.invalidationMode == .cancellingTasks, "cancelling is never undone")
        }
    }

    @Test("taskCompleted: the last task of an invalidation closes it, once", arguments: Situation.allCases)
    func taskCompletedEverywhere(_ situation: Situation) {
        var machine = Self.machine(in: situation)
        let action = machine.taskCompleted(identifier: 1)
        let closes = situation == .finishingTasks || situation == .cancellingTasks
        #expect(Self.name(action) == (closes ? "close" : "none"))
        #expect(machine.listedTasks.isEmpty)
        #expect(Self.name(machine.taskCompleted(identifier: 1)) == "none", "closing happens once")
    }

    @Test("whenAnnounced: waiters wait in every state but the last", arguments: Situation.allCases)
    func whenAnnouncedEverywhere(_ situation: Situation) {
        var machine = Self.machine(in: situation)
        #expect(Self.name(machine.whenAnnounced {}) == (situation == .invalidated ? "runNow" : "wait"))
    }

    @Test("the registry: identifiers in order, tasks listed in creation order, replaced in place, left on completion")
    func registry() {
        var machine = Machine()
        let (first, firstIdentifier) = Self.list(in: &machine)
        let (second, secondIdentifier) = Self.list(in: &machine)
        #expect(firstIdentifier == 1)
        #expect(secondIdentifier == 2)
        #expect(machine.listedTasks.map(ObjectIdentifier.init) == [first, second].map(ObjectIdentifier.init))
        let replacement = FakeTask()
        #expect(Self.name(machine.replace(first, with: replacement, identifier: firstIdentifier)) == "replaced")
        #expect(machine.listedTasks.first === replacement)
        // Replacing a task that is not listed where it was changes nothing.
        #expect(Self.name(machine.replace(first, with: FakeTask(), identifier: firstIdentifier)) == "notListed")
        #expect(Self.name(machine.taskCompleted(identifier: secondIdentifier)) == "none")
        #expect(Self.name(machine.replace(second, with: FakeTask(), identifier: secondIdentifier)) == "notListed")
        #expect(machine.listedTasks.count == 1)
        // A refused task takes no identifier; an identifier taken by a task that is never listed is not reused.
        guard case .make(let third) = machine.taskRequested() else { Issue.record("expected .make"); return }
        #expect(third == 3)
        _ = machine.invalidate(cancellingTasks: false)
        #expect(Self.name(machine.taskMade(FakeTask(), identifier: third)) == "refuse")
        #expect(machine.listedTasks.count == 1)
    }

    @Test("invalidating waits for the last task, then closes exactly once; the waiters hear the announcement")
    func closingAndAnnounced() {
        let calls = Atomic<Int>(0)
        var machine = Machine()
        let (_, first) = Self.list(in: &machine)
        let (_, second) = Self.list(in: &machine)
        #expect(Self.name(machine.whenAnnounced { calls.add(1, ordering: .relaxed) }) == "wait")
        guard case .cancel(let outstanding) = machine.invalidate(cancellingTasks: true) else {
            Issue.record("expected .cancel")
            return
        }
        #expect(outstanding.count == 2)
        #expect(Self.name(machine.whenAnnounced { calls.add(10, ordering: .relaxed) }) == "wait")
        #expect(Self.name(machine.taskCompleted(identifier: first)) == "none")
        #expect(!machine.hasFinishedInvalidating)
        #expect(Self.name(machine.taskCompleted(identifier: second)) == "close")
        #expect(machine.hasFinishedInvalidating)
        #expect(machine.invalidationMode == nil)
        #expect(Self.name(machine.whenAnnounced { calls.add(100, ordering: .relaxed) }) == "wait")
        guard case .wake(let waiters) = machine.announced() else { return }
        #expect(waiters.count == 3)
        for waiter in waiters { waiter() }
        #expect(calls.load(ordering: .relaxed) == 111)
        // Announced: a late waiter is told to act at once, and nothing changes any more.
        #expect(Self.name(machine.whenAnnounced {}) == "runNow")
        #expect(Self.name(machine.invalidate(cancellingTasks: true)) == "none")
        #expect(machine.hasFinishedInvalidating)
        #expect(!machine.acceptsTasks)
    }

    @Test(
        "impossible: sessionDidInvalidate announced in any state but closing",
        arguments: Situation.allCases.filter { $0 != .closing })
    func announcedOutOfTurnTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var machine = SessionStateMachineTests.machine(in: situation)
            _ = machine.announced()
        }
    }

    @Test("impossible: two tasks listed under one identifier")
    func listedTwiceTraps() async {
        await #expect(processExitsWith: .failure) {
            var machine = SessionStateMachineTests.Machine()
            _ = machine.taskMade(SessionStateMachineTests.FakeTask(), identifier: 1)
            _ = machine.taskMade(SessionStateMachineTests.FakeTask(), identifier: 1)
        }
    }
}
