import Herald

/// The activity indicator's logic as a value: events in, transitions and timer requests out.
///
/// Kept free of locks, clocks and callbacks so that every rule is plain code: the owner mutates it under
/// its lock and performs the returned ``Action`` after releasing the lock.
struct ActivityStateMachine {
    /// What the owner must do after an event.
    struct Action {
        /// Transitions to report, in order.
        var changes: [ActivityIndicatorChange] = []
        /// A timer to start: fire ``timerFired(generation:)`` with this generation after the delay.
        var timer: (delay: Double, generation: Int)?
        /// A retry's delay to wait out: fire ``retryDelayEnded(_:token:)`` with this task and token after it.
        var retryTimer: (delay: Double, key: TaskKey, token: Int)?
    }

    private(set) var state = ActivityIndicatorState.notActive
    private(set) var running: Set<TaskKey> = []
    /// Running tasks that wait for a network (`taskIsWaitingForConnectivity`): no network activity, so they
    /// don't keep the indicator up. They leave this set when they complete or pause, or when a network
    /// comes back (`taskDidEndWaitingForConnectivity`, or a reachable status: they start again then, without
    /// another resume).
    private(set) var waiting: Set<TaskKey> = []
    /// Tasks paused while they waited for a network. Their wait goes on (a wait is announced once), so
    /// resumed they wait again, unless a network came back meanwhile.
    private var pausedWhileWaiting: Set<TaskKey> = []
    /// Tasks waiting out a retry's delay (`taskWillRetry` with a delay), each with the token of the timer
    /// that ends the wait: no network activity until then. Pausing doesn't end the wait (the task's own
    /// timer runs on), completing does.
    private(set) var delayedRetries: [TaskKey: Int] = [:]
    private var nextRetryToken = 0
    /// The last reachability status seen.
    private(set) var networkStatus = NetworkReachabilityStatus.unknown
    private(set) var isEnabled: Bool
    let activationDelay: Double
    let completionDelay: Double
    /// Bumped whenever a pending timer stops being wanted, so a stale timer does nothing when it fires.
    private var generation = 0

    init(activationDelay: Double, completionDelay: Double, isEnabled: Bool) {
        self.activationDelay = activationDelay
        self.completionDelay = completionDelay
        self.isEnabled = isEnabled
    }

    /// A task started or continued; one paused while it waited for a network waits again. Adding a task
    /// already running does nothing.
    mutating func taskStarted(_ key: TaskKey) -> Action {
        guard running.insert(key).inserted else { return Action() }
        if pausedWhileWaiting.remove(key) != nil { waiting.insert(key) }
        return reevaluate()
    }

    /// A task paused: it is no longer running, and a wait it was in goes on while it is paused.
    mutating func taskSuspended(_ key: TaskKey) -> Action {
        if waiting.remove(key) != nil { pausedWhileWaiting.insert(key) }
        return taskLeft(key)
    }

    /// A task completed: nothing of it is kept.
    mutating func taskCompleted(_ key: TaskKey) -> Action {
        waiting.remove(key)
        pausedWhileWaiting.remove(key)
        delayedRetries[key] = nil
        return taskLeft(key)
    }

    /// Removing a task that is not running does nothing, so a duplicated completion, or a completion without
    /// a resume, can never drive the count below zero.
    private mutating func taskLeft(_ key: TaskKey) -> Action {
        guard running.remove(key) != nil else { return Action() }
        return reevaluate()
    }

    /// A task found no network and waits for one: a running task stops counting as activity; a paused one does
    /// not count when it is resumed, until the wait ends.
    mutating func taskWaiting(_ key: TaskKey) -> Action {
        guard running.contains(key) else {
            // Paused as its attempt failed: the wait, announced after the pause, goes on while it is paused, as
            // one announced before it does. Its resume must not count it as activity.
            pausedWhileWaiting.insert(key)
            return Action()
        }
        guard waiting.insert(key).inserted else { return Action() }
        return reevaluate()
    }

    /// A network came back for a waiting task: its attempt starts again, and it is activity again (or will be
    /// when resumed, if it is paused).
    mutating func taskWaitEnded(_ key: TaskKey) -> Action {
        pausedWhileWaiting.remove(key)
        guard waiting.remove(key) != nil else { return Action() }
        return reevaluate()
    }

    /// A task's attempt failed and the next one starts after `delay` seconds: until then the task is no
    /// activity, even if it is paused and resumed meanwhile (its delay runs on). A retry at once changes
    /// nothing.
    mutating func taskRetryDelayed(_ key: TaskKey, delay: Double) -> Action {
        guard delay > 0 else { return Action() }
        nextRetryToken += 1
        delayedRetries[key] = nextRetryToken
        var action = reevaluate()
        action.retryTimer = (delay, key, nextRetryToken)
        return action
    }

    /// The timer of a retry's delay fired: the task's next attempt has started, unless a later retry or its
    /// completion made the timer stale.
    mutating func retryDelayEnded(_ key: TaskKey, token: Int) -> Action {
        guard delayedRetries[key] == token else { return Action() }
        delayedRetries[key] = nil
        return reevaluate()
    }

    /// A reachability monitor announced `status`. It ends no wait: a task waits for the route to its own host,
    /// which a reachable network in general need not give it, and its own `taskDidEndWaitingForConnectivity`
    /// says when its wait is over.
    mutating func reachabilityChanged(to status: NetworkReachabilityStatus) {
        networkStatus = status
    }

    /// The tasks that count as network activity: running, not waiting for a network or out a retry's delay.
    private var active: Set<TaskKey> {
        guard !waiting.isEmpty || !delayedRetries.isEmpty else { return running }
        return running.filter { !waiting.contains($0) && delayedRetries[$0] == nil }
    }

    /// A session finished invalidating: none of its tasks can still be running, whatever was missed.
    mutating func sessionEnded(_ sessionIdentifier: Int) -> Action {
        let before = running.count
        running = running.filter { $0.sessionIdentifier != sessionIdentifier }
        waiting = waiting.filter { $0.sessionIdentifier != sessionIdentifier }
        pausedWhileWaiting = pausedWhileWaiting.filter { $0.sessionIdentifier != sessionIdentifier }
        delayedRetries = delayedRetries.filter { $0.key.sessionIdentifier != sessionIdentifier }
        return running.count == before ? Action() : reevaluate()
    }

    /// Tasks the owner will hear nothing more of (their observation ended): forgotten, as if completed.
    mutating func tasksForgotten(_ keys: [TaskKey]) -> Action {
        var changed = false
        for key in keys {
            waiting.remove(key)
            pausedWhileWaiting.remove(key)
            delayedRetries[key] = nil
            if running.remove(key) != nil { changed = true }
        }
        return changed ? reevaluate() : Action()
    }

    mutating func setEnabled(_ enabled: Bool) -> Action {
        guard enabled != isEnabled else { return Action() }
        isEnabled = enabled
        return reevaluate()
    }

    /// A timer started by an earlier action fired.
    mutating func timerFired(generation firedGeneration: Int) -> Action {
        guard firedGeneration == generation, isEnabled else { return Action() }
        var action = Action()
        switch state {
        case .delayingStart:
            // Everything that started during the delay may already be done: then it is never shown.
            move(to: active.isEmpty ? .notActive : .active, &action)
        case .delayingEnd:
            move(to: .notActive, &action)
        case .notActive, .active:
            break
        }
        return action
    }

    private mutating func reevaluate() -> Action {
        var action = Action()
        guard isEnabled else {
            if state != .notActive {
                generation += 1
                move(to: .notActive, &action)
            }
            return action
        }
        switch state {
        case .notActive where !active.isEmpty:
            move(to: .delayingStart, &action)
            generation += 1
            action.timer = (activationDelay, generation)
        case .active where active.isEmpty:
            move(to: .delayingEnd, &action)
            generation += 1
            action.timer = (completionDelay, generation)
        case .delayingEnd where !active.isEmpty:
            generation += 1  // the pending completion timer is no longer wanted
            move(to: .active, &action)
        case .notActive, .active, .delayingStart, .delayingEnd:
            // delayingStart ignores count changes until its timer fires (AF's rule).
            break
        }
        return action
    }

    private mutating func move(to newState: ActivityIndicatorState, _ action: inout Action) {
        guard newState != state else { return }
        action.changes.append(ActivityIndicatorChange(from: state, to: newState, runningTaskCount: running.count))
        state = newState
    }
}
