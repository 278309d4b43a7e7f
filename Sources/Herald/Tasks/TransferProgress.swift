import Dispatch
import Foundation
import HeraldNotifications

/// The progress of one direction of a task's transfer — the upload or the download — bound to its task.
///
/// Like AFNetworking's `NSProgress` objects, it controls the task too: ``cancel()``, ``pause()`` and
/// ``resume()`` cancel, suspend and resume the task, through the same path as calling them on the task
/// (so they post the same notifications). Counts are updated on the engine's loop thread and read from
/// any thread. Progress handlers passed to the task factories run on the session's completion queue,
/// coalesced (at most one pending call at a time, at most one every 20 ms), and never after the
/// completion handler has started; the last call before it always carries the final count.
public final class TransferProgress: Sendable {
    private struct State {
        var counts: ProgressSlots.Counts
        /// The task, held until it completes (``finish(deliveringFinalUpdateTo:)``). A strong reference keeps
        /// nothing alive longer than before: the session lists every task from its creation to its
        /// completion, and the task holds the session. A weak one would give every task a side table and
        /// send each retain and release of it through the runtime's slow path.
        var task: SessionTask?
        var isFinished = false
        var isCallbackScheduled = false
        var lastScheduled: ContinuousClock.Instant?
        /// The completed count the handler last saw, so completion can deliver the final one once.
        var deliveredCount: Int64 = -1
    }

    /// Progress handlers run at most this often; curl hands over at most 16 KiB per callback, so a fast
    /// download would otherwise wake the completion queue tens of thousands of times.
    static let handlerInterval = Duration.milliseconds(20)

    private let state: Locked<State>
    /// Held while a handler call runs, and while ``finish(deliveringFinalUpdateTo:)`` marks the end: on a
    /// concurrent completion queue (a caller's may be) two calls never overlap, a later one never shows an
    /// older count, and none runs once the completion handler may have started. Recursive: a handler may
    /// reach its own task's end on its thread.
    private let handlerTurn = NSRecursiveLock()

    /// A progress object at `completed` of `total` bytes (-1: unknown), controlling `task`, or nothing
    /// once `isFinished`.
    init(completed: Int64, total: Int64, task: SessionTask?, isFinished: Bool) {
        state = Locked(
            State(counts: ProgressSlots.Counts(completed: completed, total: total), task: task, isFinished: isFinished))
    }

    /// The number of bytes expected in all, or -1 when unknown (chunked responses, streamed bodies).
    public var totalUnitCount: Int64 { state.withLock { $0.counts.total } }

    /// The number of bytes transferred so far.
    public var completedUnitCount: Int64 { state.withLock { $0.counts.completed } }

    /// Whether the total is unknown.
    public var isIndeterminate: Bool { totalUnitCount < 0 }

    /// The fraction done, from 0 to 1; 0 while the total is unknown.
    public var fractionCompleted: Double {
        state.withLock { state in
            guard state.counts.total > 0 else { return 0 }
            return min(1, Double(state.counts.completed) / Double(state.counts.total))
        }
    }

    /// Whether the task has finished (after which the counts no longer change).
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Cancels the task, exactly as ``SessionTask/cancel()`` does.
    public func cancel() { state.withLock { $0.task }?.cancel() }

    /// Suspends the task, exactly as ``SessionTask/suspend()`` does.
    public func pause() { state.withLock { $0.task }?.suspend() }

    /// Resumes the task, exactly as ``SessionTask/resume()`` does.
    public func resume() { state.withLock { $0.task }?.resume() }

    /// Records new counts and schedules `handler` on `queue` unless a call is already pending.
    func update(
        completed: Int64, total: Int64?, queue: DispatchQueue,
        handler: (@Sendable (TransferProgress) -> Void)?
    ) {
        // nil: nothing to schedule; otherwise how long to wait before delivering.
        let delay = state.withLock { state -> Duration? in
            guard !state.isFinished else { return nil }
            state.counts.record(completed: completed, total: total)
            guard handler != nil, !state.isCallbackScheduled else { return nil }
            let now = ContinuousClock.now
            var wait = Duration.zero
            if let last = state.lastScheduled, now - last < Self.handlerInterval {
                // Too soon: deliver at the end of the interval (trailing edge), so a stream that goes
                // quiet still shows its latest count.
                wait = Self.handlerInterval - (now - last)
            }
            state.lastScheduled = now + wait
            state.isCallbackScheduled = true
            return wait
        }
        guard let delay, let handler else { return }
        let deliver: @Sendable () -> Void = { [self] in
            handlerTurn.lock()
            defer { handlerTurn.unlock() }
            let isLive = state.withLock { state -> Bool in
                state.isCallbackScheduled = false
                if !state.isFinished { state.deliveredCount = state.counts.completed }
                return !state.isFinished
            }
            if isLive { handler(self) }
        }
        if delay == .zero {
            queue.async(execute: deliver)
        } else {
            let nanoseconds = Int((delay / .nanoseconds(1)).rounded(.up))
            queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: deliver)
        }
    }

    /// A new response body begins: its total (or none) replaces the earlier body's. No handler call: the
    /// body's first bytes bring one.
    func restart(total: Int64?) {
        state.withLock { state in
            guard !state.isFinished else { return }
            state.counts.restart(total: total)
        }
    }

    /// Marks the progress finished and lets its task go: no handler call starts after this, and
    /// ``cancel()``, ``pause()`` and ``resume()`` do nothing, as they would on the completed task. Called on
    /// the completion queue just before the completion handler; if the handler has not seen the final count
    /// yet (updates are throttled), it gets one last call here, so a progress bar always ends where the
    /// transfer did.
    func finish(deliveringFinalUpdateTo handler: (@Sendable (TransferProgress) -> Void)?) {
        handlerTurn.lock()
        defer { handlerTurn.unlock() }
        let needsFinalCall = state.withLock { state -> Bool in
            state.task = nil
            guard !state.isFinished else { return false }
            state.isFinished = true
            return handler != nil && state.deliveredCount != state.counts.completed
        }
        if needsFinalCall, let handler { handler(self) }
    }
}
