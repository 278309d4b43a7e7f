/// A session's lifecycle and its task registry as a value: `active` (making and listing tasks) →
/// `invalidating` (letting its listed tasks finish, or cancelling them) → `closing` (no task left: the
/// connection pool is told to close, `sessionDidInvalidate` is on its way) → `invalidated` (announced).
///
/// Every change is a `mutating` event that returns an action, an enum the owner switches on;
/// ``SessionManager`` runs it under the session's lock and acts after releasing it. The machine decides what an
/// invalidation does — which tasks to cancel, when to close — and keeps the tasks the session lists (the
/// tasks made and not yet completed, by identifier) and the next identifier. Those waiting for the announcement
/// (`invalidateAndWait`) are part of the state they wait in, so no list outlives the state it belongs to.
///
/// The machine knows its tasks only as objects (`Task`): its tests build it alone, with no session. An event
/// that cannot happen in a state is a bug of the caller: it stops the process with `preconditionFailure`.
struct SessionStateMachine<Task: AnyObject> {
    /// What an invalidation does with the tasks still listed.
    enum Mode: Equatable {
        /// Let them finish (AF's `finishTasksAndInvalidate`).
        case finishingTasks
        /// Cancel them (AF's `invalidateAndCancel`).
        case cancellingTasks
    }

    typealias Waiter = @Sendable () -> Void

    private enum State {
        case active(waiters: [Waiter])
        case invalidating(Mode, waiters: [Waiter])
        case closing(waiters: [Waiter])
        case invalidated
    }

    private var state: State = .active(waiters: [])
    /// The tasks made and not yet completed, by identifier.
    private var tasks: [Int: Task] = [:]
    /// The identifier the next task gets: unique within the session.
    private var nextTaskIdentifier = 1

    // MARK: - reads

    /// Whether the session still makes tasks.
    var acceptsTasks: Bool {
        if case .active = state { return true }
        return false
    }

    /// Whether the session has been invalidated (it may still be finishing its tasks).
    var isInvalidated: Bool { !acceptsTasks }

    /// Whether the invalidation has finished: no task was left, and the pool was told to close.
    var hasFinishedInvalidating: Bool {
        switch state {
        case .active, .invalidating: false
        case .closing, .invalidated: true
        }
    }

    /// The mode an invalidation is in, while it waits for its tasks.
    var invalidationMode: Mode? {
        if case .invalidating(let mode, _) = state { return mode }
        return nil
    }

    /// The listed tasks, in creation order.
    var listedTasks: [Task] {
        tasks.sorted { $0.key < $1.key }.map(\.value)
    }

    // MARK: - the registry

    enum TaskRequestAction {
        /// Make the task with `identifier`, then list it with ``taskMade(_:identifier:)``.
        case make(identifier: Int)
        /// The session has been invalidated: refuse.
        case refuse
    }

    /// A factory is about to make a task.
    mutating func taskRequested() -> TaskRequestAction {
        guard acceptsTasks else { return .refuse }
        defer { nextTaskIdentifier += 1 }
        return .make(identifier: nextTaskIdentifier)
    }

    enum TaskListAction {
        /// The task is listed: hand it to the caller.
        case listed
        /// The session was invalidated while the task was made: it is not listed, will never run, and the
        /// factory refuses.
        case refuse
    }

    /// The task with `identifier` (from ``taskRequested()``) has been made.
    mutating func taskMade(_ task: Task, identifier: Int) -> TaskListAction {
        guard acceptsTasks else { return .refuse }
        precondition(tasks[identifier] == nil, "task \(identifier) was listed twice")
        tasks[identifier] = task
        return .listed
    }

    enum ReplaceAction {
        /// `replacement` is listed where `task` was.
        case replaced
        /// `task` is no longer listed (it completed meanwhile): nothing changes.
        case notListed
    }

    /// `replacement` takes the place of `task`, under the same identifier: a data task that became a download,
    /// or back.
    mutating func replace(_ task: Task, with replacement: Task, identifier: Int) -> ReplaceAction {
        guard tasks[identifier] === task else { return .notListed }
        tasks[identifier] = replacement
        return .replaced
    }

    enum TaskCompletedAction {
        /// Nothing more to do.
        case none
        /// The invalidation has no task left: close the pool and announce it, after what is already queued
        /// on the event queue, then report ``announced()``.
        case close
    }

    /// The task with `identifier` has completed: it leaves the list.
    mutating func taskCompleted(identifier: Int) -> TaskCompletedAction {
        tasks[identifier] = nil
        return closeIfDone()
    }

    // MARK: - invalidation

    enum InvalidateAction {
        /// Nothing to do now: already closing or invalidated, or the listed tasks finish first (each
        /// ``taskCompleted(identifier:)`` says when the last one has).
        case none
        /// Cancel `tasks`; their completions finish the invalidation.
        case cancel([Task])
        /// No task is listed: close the pool and announce it, after what is already queued on the event
        /// queue, then report ``announced()``.
        case close
    }

    /// ``SessionManager/invalidate(cancelingTasks:)``: the session makes no more tasks. A second call with
    /// `cancellingTasks` still cancels what is listed, and turns an invalidation that let its tasks finish into
    /// one that cancels them.
    mutating func invalidate(cancellingTasks: Bool) -> InvalidateAction {
        let mode: Mode = cancellingTasks ? .cancellingTasks : .finishingTasks
        switch state {
        case .active(let waiters):
            state = .invalidating(mode, waiters: waiters)
        case .invalidating(let current, let waiters):
            if current == .finishingTasks, mode == .cancellingTasks {
                state = .invalidating(.cancellingTasks, waiters: waiters)
            }
        case .closing, .invalidated:
            return .none
        }
        if case .close = closeIfDone() { return .close }
        return cancellingTasks ? .cancel(listedTasks) : .none
    }

    /// Invalidating with no task left: closing.
    private mutating func closeIfDone() -> TaskCompletedAction {
        guard tasks.isEmpty, case .invalidating(_, let waiters) = state else { return .none }
        state = .closing(waiters: waiters)
        return .close
    }

    enum AnnouncedAction {
        /// Wake those waiting for the announcement.
        case wake([Waiter])
    }

    /// `sessionDidInvalidate` has been posted.
    mutating func announced() -> AnnouncedAction {
        guard case .closing(let waiters) = state else {
            preconditionFailure("sessionDidInvalidate announced in \(state), not while closing")
        }
        state = .invalidated
        return .wake(waiters)
    }

    enum AnnouncementWaitAction {
        /// The announcement has happened: run the waiter now.
        case runNow
        /// The waiter is kept, and woken by ``announced()``.
        case wait
    }

    /// `waiter` waits for the announcement.
    mutating func whenAnnounced(_ waiter: @escaping Waiter) -> AnnouncementWaitAction {
        switch state {
        case .active(var waiters):
            waiters.append(waiter)
            state = .active(waiters: waiters)
        case .invalidating(let mode, var waiters):
            waiters.append(waiter)
            state = .invalidating(mode, waiters: waiters)
        case .closing(var waiters):
            waiters.append(waiter)
            state = .closing(waiters: waiters)
        case .invalidated:
            return .runNow
        }
        return .wait
    }
}
