import Dispatch

/// The progress of one direction of a task's transfer — the upload or the download — bound to its task.
///
/// Like AFNetworking's `NSProgress` objects, it controls the task too: ``cancel()``, ``pause()`` and
/// ``resume()`` cancel, suspend and resume the task, through the same path as calling them on the task
/// (so they post the same notifications). Counts are updated on the engine's loop thread and read from
/// any thread. Progress handlers passed to the task factories run on the session's completion queue,
/// coalesced (at most one pending call at a time), and never after the completion handler has started.
public final class TransferProgress: Sendable {
    private struct State {
        var totalUnitCount: Int64 = -1
        var completedUnitCount: Int64 = 0
        weak var task: SessionTask?
        var isFinished = false
        var isCallbackScheduled = false
    }

    private let state = Locked(State())

    init() {}

    func bind(to task: SessionTask) {
        state.withLock { $0.task = task }
    }

    /// The number of bytes expected in all, or -1 when unknown (chunked responses, streamed bodies).
    public var totalUnitCount: Int64 { state.withLock { $0.totalUnitCount } }

    /// The number of bytes transferred so far.
    public var completedUnitCount: Int64 { state.withLock { $0.completedUnitCount } }

    /// Whether the total is unknown.
    public var isIndeterminate: Bool { totalUnitCount < 0 }

    /// The fraction done, from 0 to 1; 0 while the total is unknown.
    public var fractionCompleted: Double {
        state.withLock { state in
            guard state.totalUnitCount > 0 else { return 0 }
            return min(1, Double(state.completedUnitCount) / Double(state.totalUnitCount))
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
        let schedule = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.completedUnitCount = completed
            if let total, total >= 0 { state.totalUnitCount = total }
            guard handler != nil, !state.isCallbackScheduled else { return false }
            state.isCallbackScheduled = true
            return true
        }
        guard schedule, let handler else { return }
        queue.async { [self] in
            let deliver = state.withLock { state -> Bool in
                state.isCallbackScheduled = false
                return !state.isFinished
            }
            if deliver { handler(self) }
        }
    }

    /// Marks the progress finished: no handler call starts after this.
    func finish() {
        state.withLock { $0.isFinished = true }
    }
}
