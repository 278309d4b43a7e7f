import Dispatch
import HeraldNotifications

extension SessionManager {
    /// Invalidates the session and returns once `sessionDidInvalidate` has reached every observer of
    /// the session's ``notificationCenter``, whatever their delivery.
    ///
    /// Returns after: every task has completed (cancelled first if `cancelingTasks` is `true`) and its
    /// `taskDidComplete` has been posted; `sessionDidInvalidate` has been posted; and the center has been
    /// drained (see `NotificationHub.drain()`): `.posting` handlers have returned, `.queue` observers'
    /// handlers have returned from everything in their mailboxes, and notification sequences hold the
    /// notification in their buffers; and a persistent ``cookieStore`` has tried to write the cookies set so far
    /// (a write that failed, on a full disk or a folder gone, counts too: ``CookieStore/flush()`` then returns
    /// the failure). A program that exits after this call has lost no notification of this session, and no
    /// cookie unless that write failed. Sinks that write on a queue of their own (an event log, a logger) may
    /// still have to be flushed.
    ///
    /// The drain covers the whole center, so it also waits for notifications other sessions posted on
    /// the same center before `sessionDidInvalidate`.
    ///
    /// Suspends the calling task, never blocks a thread. Called from a task that a handler started, it
    /// can't deadlock: it waits for that handler to return, and the handler doesn't wait for it. With
    /// `cancelingTasks: false`, a task that isn't finishing on its own — never resumed, suspended, waiting for
    /// connectivity, a streamed body nobody reads, an event stream's open connection (``events(for:options:)``),
    /// which runs until the server ends it — keeps it waiting (as it keeps the session from invalidating): pass
    /// `true`, or cancel the calling task at a deadline. Cancelling the calling task ends the wait at once (a
    /// shutdown with a deadline); the invalidation goes on.
    ///
    /// An interceptor is not such a handler: its ``RequestAdapter/adapt(_:for:)`` and ``RequestRetrier/retry(_:)``
    /// run for a task of this session, which stays listed while they run. Called there with
    /// `cancelingTasks: false`, this waits for that very task: until its
    /// ``SessionConfiguration/timeoutIntervalForResource`` passes and completes it with
    /// ``HeraldError/Code/timedOut``, and for good in the `adapt` of its first attempt (no transfer has started
    /// the resource timeout yet) or when that timeout is 0. There, pass `true` (the task then completes at once
    /// as cancelled, whatever `adapt` or `retry` is still doing), or don't wait from an interceptor.
    ///
    /// The event handler of a ``dataStreamTask(with:bufferPolicy:eventHandler:)`` is given its events apart from
    /// the task's completion: when this returns, that handler may still be running, or still have to be given
    /// the task's last chunks and its ``DataStreamEvent/complete(_:)``, as it may after `taskDidComplete`.
    ///
    /// - Parameter cancelingTasks: `false` (the default) lets outstanding tasks finish; `true` cancels them
    ///   first. As in ``invalidate(cancelingTasks:)``, which this calls.
    public func invalidateAndWait(cancelingTasks: Bool = false) async {
        let done = AsyncCompletionRelay<Void>()
        invalidate(cancelingTasks: cancelingTasks) { done.resume(with: .success(())) }
        _ = await withTaskCancellationHandler {
            await done.result()
        } onCancel: {
            done.resume(with: .success(()))
        }
    }

    /// Invalidates the session and blocks the calling thread until `sessionDidInvalidate` has reached
    /// every observer of the session, or until `timeout` has passed: the synchronous form of
    /// ``invalidateAndWait(cancelingTasks:)``, for programs that aren't `async`.
    ///
    /// Called from a place the invalidation itself has to get through — inside a handler of any
    /// notification hub (`.posting` or `.queue`), on the session's own completion queue (the default
    /// ``completionQueue``), on its internal event queue, or inside a hook, an interceptor or a body stream's
    /// read of one of its tasks (a task's hook queue) — waiting could only end in the timeout,
    /// because `sessionDidInvalidate` can't be delivered until the caller returns. There it invalidates,
    /// doesn't wait, and returns `false`. A completion queue you passed in is yours and is not checked: if it
    /// is serial (the main queue, say), don't call this on the completion queue at all — from a completion
    /// handler or from any other code running on it — but use the `async` form: each task's completion step
    /// (its completion handler, after which it leaves the session's tasks) is queued there behind the caller,
    /// so while a task is left to complete the wait can only end in the timeout. Nor is a queue you gave an
    /// observer (`.queue(q)`, `.queue(.main)` included): called on it, the wait ends in the timeout, as that
    /// observer's `sessionDidInvalidate` waits for the caller to return.
    ///
    /// As with the `async` form, a ``dataStreamTask(with:bufferPolicy:eventHandler:)``'s event handler may
    /// still be running, or still have to be given its last events, when this returns.
    ///
    /// - Parameters:
    ///   - cancelingTasks: `false` (the default) lets outstanding tasks finish; `true` cancels them first.
    ///   - timeout: How long to wait at most.
    /// - Returns: `true` once `sessionDidInvalidate` has been delivered everywhere and a persistent
    ///   ``cookieStore`` has tried to write the cookies set so far (``CookieStore/flush()`` returns a failure);
    ///   `false` if the timeout passed first or the call was made from a place where it can't wait. The
    ///   invalidation goes on either way.
    public func invalidateAndWait(cancelingTasks: Bool = false, timeout: Duration) -> Bool {
        if NotificationHub.isHandlerRunningOnCurrentThread || queueMarker.isCurrentQueueMarked {
            invalidate(cancelingTasks: cancelingTasks)
            return false
        }
        let delivered = DispatchSemaphore(value: 0)
        invalidate(cancelingTasks: cancelingTasks) { delivered.signal() }
        let (seconds, attoseconds) = timeout.components
        // Beyond what a count of nanoseconds holds (about 292 years) is forever.
        guard seconds < Int64.max / 1_000_000_000 else { return delivered.wait(timeout: .distantFuture) == .success }
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: nanoseconds))
        return delivered.wait(timeout: deadline) == .success
    }

    /// Invalidates, then calls `completion` once `sessionDidInvalidate` has been posted, the center
    /// drained, and a persistent store has tried to write the cookies the session's responses set.
    private func invalidate(cancelingTasks: Bool, then completion: @escaping @Sendable () -> Void) {
        invalidate(cancelingTasks: cancelingTasks)
        let center = notificationCenter
        let cookieStore = cookieStore
        whenInvalidationPosted { center.drain { cookieStore.whenSaved(then: completion) } }
    }
}

/// Marks the queues a blocking wait for the session's invalidation must not run on: its event queue, the
/// completion queue it owns, and its tasks' hook queues. A key of its own per session.
final class SessionQueueMarker: @unchecked Sendable {
    // Safety: the key is immutable after init; libdispatch keys are safe to use from any thread.
    private let key = DispatchSpecificKey<Bool>()

    func mark(_ queue: DispatchQueue) {
        queue.setSpecific(key: key, value: true)
    }

    /// Whether the calling code runs on a marked queue.
    var isCurrentQueueMarked: Bool {
        DispatchQueue.getSpecific(key: key) == true
    }
}
