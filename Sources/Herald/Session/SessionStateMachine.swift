/// A session's lifecycle as a value: `active` → `invalidating` (letting its tasks finish, or cancelling
/// them) → `closing` (no task left: the connection pool is told to close, `sessionDidInvalidate` is on its
/// way) → `invalidated` (announced).
///
/// Every change is a `mutating` transition that says what the owner must do; ``SessionManager`` calls it
/// under the session's lock and acts after releasing it. Those waiting for the announcement
/// (`invalidateAndWait`) are part of the state they wait in, so no list outlives the state it belongs to.
struct SessionStateMachine {
    /// What an invalidation does with the tasks still outstanding.
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

    /// Whether the session still creates tasks.
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

    /// ``SessionManager/invalidate(cancelingTasks:)``. Returns whether the outstanding tasks are to be
    /// cancelled: a second call with `cancellingTasks` still cancels what is outstanding, and turns an
    /// invalidation that let its tasks finish into one that cancels them.
    mutating func invalidate(cancellingTasks: Bool) -> Bool {
        let mode: Mode = cancellingTasks ? .cancellingTasks : .finishingTasks
        switch state {
        case .active(let waiters):
            state = .invalidating(mode, waiters: waiters)
        case .invalidating(let current, let waiters):
            if current == .finishingTasks, mode == .cancellingTasks {
                state = .invalidating(.cancellingTasks, waiters: waiters)
            }
        case .closing, .invalidated:
            break
        }
        return cancellingTasks
    }

    /// The session's task list is empty, or a task just left it. Returns `true` exactly once: when an
    /// invalidation has no task left to wait for, and the owner is to close the pool and announce it.
    mutating func tasksRemaining(_ count: Int) -> Bool {
        guard count == 0, case .invalidating(_, let waiters) = state else { return false }
        state = .closing(waiters: waiters)
        return true
    }

    /// `sessionDidInvalidate` has been posted. Returns those waiting for it, to be called after the lock.
    mutating func announced() -> [Waiter] {
        guard case .closing(let waiters) = state else {
            assertionFailure("sessionDidInvalidate announced in \(state), not while closing")
            return []
        }
        state = .invalidated
        return waiters
    }

    /// Waits for the announcement: returns `true` when it has happened already (the caller acts at once);
    /// otherwise `waiter` is kept and returned by ``announced()``.
    mutating func whenAnnounced(_ waiter: @escaping Waiter) -> Bool {
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
            return true
        }
        return false
    }
}
