import Dispatch
import Foundation
import HeraldEngine
import HeraldNotifications

// Invalidation: the session stops creating tasks, and once its last task has completed (or been cancelled)
// it releases its connection pool and posts `sessionDidInvalidate`, last of all its notifications.
extension SessionManager {
    /// Invalidates the session: it creates no more tasks, and once its last task has completed it posts
    /// `sessionDidInvalidate` and releases its connection pool.
    ///
    /// - Parameter cancelingTasks: `false` lets outstanding tasks finish (AF's
    ///   `finishTasksAndInvalidate`; a task that isn't finishing on its own keeps the session from finishing:
    ///   one never resumed, one suspended, one waiting for connectivity, a streamed body nobody reads, an event
    ///   stream's open connection (``events(for:options:)``), which runs until the server ends it);
    ///   `true` cancels them all first (AF's `invalidateAndCancel`). Calling it again does nothing more,
    ///   except that `true` still cancels what is outstanding.
    public func invalidate(cancelingTasks: Bool) {
        switch state.withLock({ $0.lifecycle.invalidate(cancellingTasks: cancelingTasks) }) {
        case .none:
            break
        case .cancel(let outstanding):
            for task in outstanding { task.cancel() }
        case .close:
            // After what is already queued on the event queue, so `sessionDidInvalidate` stays last.
            eventPoster.async { [self] in finishInvalidating() }
        }
    }

    /// Forgets a completed task: it leaves the task lists before `taskDidComplete` is posted. Returns what
    /// its leaving means for the invalidation.
    func forget(_ task: SessionTask) -> SessionStateMachine<SessionTask>.TaskCompletedAction {
        state.withLock { $0.lifecycle.taskCompleted(identifier: task.taskIdentifier) }
    }

    /// Removes the download directory, closes the pool and posts `sessionDidInvalidate`: the invalidation has
    /// no task left. Event queue.
    func finishInvalidating() {
        // Only an empty directory goes: a kept download (a failed move, resume data) keeps it.
        downloadDirectory.removeIfEmpty()
        // Release the pool first, so that by the time observers hear of the invalidation the engine has
        // closed every connection, socket and timer of this session. Closing hands the connections'
        // `connectionDidChangeState` to this queue from the loop thread; the announcement goes there after
        // them, so `sessionDidInvalidate` stays last.
        guard let multi else { return announceInvalidation() }
        engine.execute(.closePool(TransferError(.sessionInvalidated, "The session was invalidated.")), on: multi)
        engine.execute { [self] in eventPoster.async { self.announceInvalidation() } }
    }

    /// Runs the invalidation hook, posts `sessionDidInvalidate` and wakes who waits for it. Event queue.
    private func announceInvalidation() {
        // The connections the pool's closing ended, and any change still waiting: before the invalidation.
        eventPoster.postConnectionChanges()
        // AF's order: the hook first, then the notification, both after every task's completion.
        readHooks { $0.sessionDidBecomeInvalid }?(self, nil)
        notificationCenter.post(
            .sessionDidInvalidate, object: self,
            userInfo: SessionInvalidation(sessionIdentifier: identifier, date: Date(), error: nil))
        switch state.withLock({ $0.lifecycle.announced() }) {
        case .wake(let waiters):
            for waiter in waiters { waiter() }
        }
    }

    /// Calls `body` once `sessionDidInvalidate` has been posted: at once if it already has, otherwise on
    /// the event queue right after the post returns.
    func whenInvalidationPosted(_ body: @escaping @Sendable () -> Void) {
        switch state.withLock({ $0.lifecycle.whenAnnounced(body) }) {
        case .runNow: body()
        case .wait: break
        }
    }
}
