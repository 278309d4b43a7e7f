import Herald
import HeraldNotifications

/// Decides when to show a network activity indicator: AFNetworking's `AFNetworkActivityIndicatorManager`
/// as a plug-in observer.
///
/// It follows the four-state machine of ``ActivityIndicatorState``: a task must run for
/// ``activationDelay`` before the indicator shows (so quick requests never flash it), and it stays up
/// for ``completionDelay`` after the last task ends (so back-to-back requests don't make it flicker).
///
/// Unlike AFNetworking's counter it keeps the **set** of running tasks, keyed by session and task
/// identifier: a task is added on `taskDidResume` and removed on `taskDidSuspend` or `taskDidComplete`,
/// and removing one that isn't there does nothing. Duplicated, missing or out-of-order events therefore
/// can't leave it stuck on or make it negative, and `sessionDidInvalidate` clears whatever is left of
/// that session (and ``observationDidEnd(_:)`` what a cancelled token left open). A task waiting for a network (`taskIsWaitingForConnectivity`) stays in the set but is no
/// activity: it doesn't keep the indicator up, and ``waitingTaskCount`` counts it until it completes,
/// pauses, or its network comes back (`taskDidEndWaitingForConnectivity`: it transfers again, and is activity
/// again); a `NetworkReachability` posting on the same center sets ``networkStatus`` and ends no wait, since a
/// network in general need not route to the task's host. Paused and resumed while it still waits, it waits
/// again: a wait is announced once, however often the task is paused in it. A task waiting out a retry's delay
/// (`taskWillRetry` with a delay) is no activity either, from the announcement until the delay has passed.
///
/// ```swift
/// let indicator = NetworkActivityIndicator { change in
///     print(change.to.isVisible ? "busy" : "idle")
/// }
/// let token = indicator.observe(session.notificationCenter)
/// ```
///
/// Thread safety: every member may be used from any thread. The change handler is called outside the
/// indicator's lock, one call at a time and in transition order, on the thread delivering the indicator's changes
/// at the time: the one that caused the change (a session's event queue, or the scheduler's thread when a delay
/// ends), or, when another thread was delivering an earlier change just then, that thread, right after it.
public final class NetworkActivityIndicator: SessionObserver {

    /// Seconds a task must run before the indicator shows. Default 1.0, as AFNetworking.
    public let activationDelay: Double
    /// Seconds the indicator stays up after the last task ended. Default 0.17, as AFNetworking.
    public let completionDelay: Double

    private let scheduler: any ObserverScheduler
    private let machine: OrderedDelivery<ActivityStateMachine, ActivityIndicatorChange>

    /// Creates an indicator. Register it with ``HeraldObservers/Herald/SessionObserver/observe(_:delivery:)``.
    ///
    /// - Parameters:
    ///   - activationDelay: Seconds before showing; default 1.0.
    ///   - completionDelay: Seconds before hiding; default 0.17.
    ///   - isEnabled: Whether it reacts at all; default `true` (AFNetworking's shared manager starts
    ///     disabled because it is a singleton; an indicator you create is meant to be used).
    ///   - scheduler: How delays are waited; default ``DispatchObserverScheduler``. Tests pass a manual one.
    ///   - onChange: Called on every state transition, see the type's thread-safety note. Show or hide
    ///     your indicator when ``ActivityIndicatorChange/visibilityChanged`` is `true`.
    public init(
        activationDelay: Double = 1.0,
        completionDelay: Double = 0.17,
        isEnabled: Bool = true,
        scheduler: any ObserverScheduler = DispatchObserverScheduler(),
        onChange: (@Sendable (ActivityIndicatorChange) -> Void)? = nil
    ) {
        self.activationDelay = max(0, activationDelay)
        self.completionDelay = max(0, completionDelay)
        self.scheduler = scheduler
        self.machine = OrderedDelivery(
            ActivityStateMachine(
                activationDelay: self.activationDelay, completionDelay: self.completionDelay, isEnabled: isEnabled),
            consumer: { change in onChange?(change) })
    }

    /// The current state.
    public var state: ActivityIndicatorState { machine.read { $0.state } }

    /// Whether the indicator should be shown now (``ActivityIndicatorState/active`` or
    /// ``ActivityIndicatorState/delayingEnd``).
    public var isVisible: Bool { state.isVisible }

    /// How many tasks are running now.
    public var runningTaskCount: Int { machine.read { $0.running.count } }

    /// The tasks running now.
    public var runningTasks: Set<TaskKey> { machine.read { $0.running } }

    /// How many running tasks wait for a network ("waiting for the network"), not counted as activity.
    public var waitingTaskCount: Int { machine.read { $0.waiting.count } }

    /// The last status a `NetworkReachability` posting on the observed center announced;
    /// `NetworkReachabilityStatus.unknown` before any.
    public var networkStatus: NetworkReachabilityStatus { machine.read { $0.networkStatus } }

    /// Whether the indicator reacts to activity. Disabling it hides it at once (moving to
    /// ``ActivityIndicatorState/notActive``) while it keeps tracking tasks, so enabling it again starts
    /// from the tasks actually running.
    public var isEnabled: Bool {
        get { machine.read { $0.isEnabled } }
        set { perform { $0.setEnabled(newValue) } }
    }

    // MARK: - SessionObserver

    /// Adds the task to the running set.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        perform { $0.taskStarted(key) }
    }

    /// Removes the task from the running set.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let key = TaskKey(notification.userInfo)
        perform { $0.taskSuspended(key) }
    }

    /// Removes the task from the running set; nothing happens if it wasn't there.
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let key = TaskKey(notification.userInfo)
        perform { $0.taskCompleted(key) }
    }

    /// Marks the task as waiting for a network: it no longer keeps the indicator up.
    /// - Parameter notification: `taskIsWaitingForConnectivity`.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let key = TaskKey(notification.userInfo)
        perform { $0.taskWaiting(key) }
    }

    /// Counts the task as activity again: a network came back and its attempt starts again.
    /// - Parameter notification: `taskDidEndWaitingForConnectivity`.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {
        let key = TaskKey(notification.userInfo)
        perform { $0.taskWaitEnded(key) }
    }

    /// Stops counting the task as activity while it waits out the retry's delay.
    /// - Parameter notification: `taskWillRetry`.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {
        let key = TaskKey(notification.userInfo)
        // What is left of the delay: delivery on the observer's queue may come late.
        let delay = notification.userInfo.remainingDelay()
        perform { $0.taskRetryDelayed(key, delay: delay) }
    }

    /// Records the status in ``networkStatus``. It ends no task's wait: a task waits for the route to its own
    /// host, which a reachable network in general need not give it (an IPv6 host on a network with IPv4 routes
    /// only), and its own `taskDidEndWaitingForConnectivity` ends its wait. A monitor of one host
    /// (`ReachabilityChange.host` set) says nothing of the network in general, and is passed over.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        guard notification.userInfo.host == nil else { return }
        let status = notification.userInfo.status
        machine.update { machine in
            machine.reachabilityChanged(to: status)
            return ((), [])
        }
    }

    /// Removes every task of the session that is still in the running set.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let session = notification.userInfo.sessionIdentifier
        perform { $0.sessionEnded(session) }
    }

    /// A registration of the indicator ended (its token cancelled or released) while it lives on: the tasks it
    /// announced as running, whose completion it will now never hear, are forgotten, so they don't keep it up.
    /// - Parameter end: What the registration left open.
    public func observationDidEnd(_ end: ObservationEnd) {
        let keys = end.openTasks.map { TaskKey($0) }
        perform { $0.tasksForgotten(keys) }
    }

    // MARK: - plumbing

    private func perform(_ event: (inout ActivityStateMachine) -> ActivityStateMachine.Action) {
        let (timer, retryTimer) = machine.update { machine in
            let action = event(&machine)
            return ((action.timer, action.retryTimer), action.changes)
        }
        if let timer {
            scheduler.schedule(after: timer.delay) { [weak self] in
                self?.perform { $0.timerFired(generation: timer.generation) }
            }
        }
        if let retryTimer {
            scheduler.schedule(after: retryTimer.delay) { [weak self] in
                self?.perform { $0.retryDelayEnded(retryTimer.key, token: retryTimer.token) }
            }
        }
    }
}
