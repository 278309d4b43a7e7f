import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Testing

/// Records every change an indicator reports.
final class ChangeLog: Sendable {
    private let changes = Locked<[ActivityIndicatorChange]>([])
    var all: [ActivityIndicatorChange] { changes.withLock { $0 } }
    var states: [ActivityIndicatorState] { all.map(\.to) }
    var visibility: [Bool] { all.filter(\.visibilityChanged).map(\.to.isVisible) }
    func record(_ change: ActivityIndicatorChange) { changes.withLock { $0.append(change) } }
}

@Suite("Network activity indicator")
struct ActivityIndicatorTests {
    let clock = ManualScheduler()
    let log = ChangeLog()

    func makeIndicator(activation: Double = 1.0, completion: Double = 0.17, enabled: Bool = true)
        -> NetworkActivityIndicator
    {
        NetworkActivityIndicator(
            activationDelay: activation, completionDelay: completion, isEnabled: enabled, scheduler: clock,
            onChange: log.record)
    }

    @Test("defaults are AFNetworking's: 1.0 s to show, 0.17 s to hide")
    func defaults() {
        let indicator = NetworkActivityIndicator()
        #expect(indicator.activationDelay == 1.0)
        #expect(indicator.completionDelay == 0.17)
        #expect(indicator.state == .notActive)
        #expect(indicator.isEnabled)
    }

    @Test("a request shorter than the activation delay never shows")
    func shortRequestNeverShows() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 0.5)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.49)
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 0.02)
        #expect(indicator.state == .notActive)
        #expect(log.states == [.delayingStart, .notActive])
        #expect(log.visibility.isEmpty)
    }

    @Test("a long request shows after exactly the activation delay and hides after the completion delay")
    func longRequestShowsAndHides() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 0.999)
        #expect(!indicator.isVisible)
        clock.advance(by: 0.001)
        #expect(indicator.state == .active)
        clock.advance(by: 2)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        #expect(indicator.state == .delayingEnd)
        #expect(indicator.isVisible)
        clock.advance(by: 0.16)
        #expect(indicator.isVisible)
        clock.advance(by: 0.01)
        #expect(indicator.state == .notActive)
        #expect(log.states == [.delayingStart, .active, .delayingEnd, .notActive])
        #expect(log.visibility == [true, false])
    }

    @Test("overlapping requests show once and hide once")
    func overlappingRequests() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 0.3)
        indicator.taskDidResume(Payloads.resume(task: 2))
        clock.advance(by: 0.8)
        indicator.taskDidResume(Payloads.resume(task: 3, session: 2))
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.5)
        indicator.taskDidComplete(Payloads.complete(task: 2))
        #expect(indicator.runningTaskCount == 1)
        clock.advance(by: 0.5)
        indicator.taskDidComplete(Payloads.complete(task: 3, session: 2))
        clock.advance(by: 1)
        #expect(log.visibility == [true, false])
        #expect(log.states == [.delayingStart, .active, .delayingEnd, .notActive])
    }

    @Test("a request starting within the completion delay keeps it shown without flicker")
    func backToBackRequests() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1.5)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.1)
        indicator.taskDidResume(Payloads.resume(task: 2))
        #expect(indicator.state == .active)
        clock.advance(by: 0.1)  // the stale completion timer fires here and must do nothing
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 2))
        clock.advance(by: 0.17)
        #expect(log.states == [.delayingStart, .active, .delayingEnd, .active, .delayingEnd, .notActive])
        #expect(log.visibility == [true, false])
    }

    @Test("a duplicated taskDidComplete doesn't break it")
    func duplicatedCompletion() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 2))
        clock.advance(by: 1)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        indicator.taskDidComplete(Payloads.complete(task: 1))
        #expect(indicator.runningTaskCount == 1)
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 2))
        indicator.taskDidComplete(Payloads.complete(task: 2))
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        #expect(indicator.runningTaskCount == 0)
        // Still works afterwards: the count did not go negative.
        indicator.taskDidResume(Payloads.resume(task: 3))
        clock.advance(by: 1)
        #expect(indicator.state == .active)
    }

    @Test("a complete without a resume doesn't drive it negative or show it")
    func completeWithoutResume() {
        let indicator = makeIndicator()
        indicator.taskDidComplete(Payloads.complete(task: 7))
        indicator.taskDidSuspend(Payloads.suspend(task: 7))
        clock.advance(by: 5)
        #expect(log.all.isEmpty)
        indicator.taskDidResume(Payloads.resume(task: 8))
        #expect(indicator.runningTaskCount == 1)
        clock.advance(by: 1)
        #expect(indicator.isVisible)
    }

    @Test("a duplicated resume counts the task once")
    func duplicatedResume() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
    }

    @Test("out of order: a complete arriving before its resume cannot leave it stuck on")
    func completeBeforeResume() {
        let indicator = makeIndicator()
        indicator.taskDidComplete(Payloads.complete(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        #expect(indicator.isVisible)
        // The task's only completion already went by; invalidating its session clears it.
        indicator.sessionDidInvalidate(Payloads.invalidate(session: 1))
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        #expect(indicator.runningTaskCount == 0)
    }

    @Test("same task identifier in two sessions counts as two tasks")
    func tasksKeyedBySession() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1, session: 1))
        indicator.taskDidResume(Payloads.resume(task: 1, session: 2))
        indicator.taskDidComplete(Payloads.complete(task: 1, session: 1))
        #expect(indicator.runningTasks == [TaskKey(sessionIdentifier: 2, taskIdentifier: 1)])
    }

    @Test("suspend removes the task and resume adds it back")
    func suspendAndResume() {
        let indicator = makeIndicator()
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        #expect(indicator.state == .delayingEnd)
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.17)
        #expect(log.visibility == [true, false])
    }

    @Test("disabled, it never shows; disabling hides it at once; enabling starts from what is running")
    func enabling() {
        let indicator = makeIndicator(enabled: false)
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 2)
        #expect(indicator.state == .notActive)
        #expect(log.all.isEmpty)
        indicator.isEnabled = true
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        indicator.isEnabled = false
        #expect(indicator.state == .notActive)
        clock.advance(by: 5)
        #expect(log.states == [.delayingStart, .active, .notActive])
    }

    @Test("zero delays show and hide on the next scheduler turn")
    func zeroDelays() {
        let indicator = makeIndicator(activation: 0, completion: 0)
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 0)
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0)
        #expect(indicator.state == .notActive)
    }

    @Test("events from many threads at once leave it idle with nothing running")
    func concurrentEvents() async {
        let indicator = makeIndicator(activation: 0, completion: 0)
        await withTaskGroup(of: Void.self) { group in
            for session in 1...8 {
                group.addTask {
                    for task in 1...200 {
                        indicator.taskDidResume(Payloads.resume(task: task, session: session))
                        if task % 3 == 0 { indicator.taskDidSuspend(Payloads.suspend(task: task, session: session)) }
                        indicator.taskDidComplete(Payloads.complete(task: task, session: session))
                        indicator.taskDidComplete(Payloads.complete(task: task, session: session))
                    }
                }
            }
        }
        clock.advance(by: 0)
        clock.advance(by: 0)
        #expect(indicator.runningTaskCount == 0)
        #expect(indicator.state == .notActive)
        // Reported transitions chain: each starts where the previous one ended.
        let changes = log.all
        for (previous, next) in zip(changes, changes.dropFirst()) {
            #expect(previous.to == next.from)
        }
    }
}
