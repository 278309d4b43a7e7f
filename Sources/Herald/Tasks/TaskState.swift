/// Where a task is in its life.
///
/// `suspended` (new tasks start here) → `running` ⇄ `suspended`; `running`/`suspended` → `canceling` →
/// `completed`; `running` → `completed`. Every call on a completed task does nothing.
public enum TaskState: Sendable, Hashable, CustomStringConvertible {
    /// Created or suspended: no bytes move.
    case suspended
    /// Transferring.
    case running
    /// Cancelled; the completion is on its way.
    case canceling
    /// Finished; the completion handler has been scheduled and `taskDidComplete` follows it.
    case completed

    /// The state's name.
    public var description: String {
        switch self {
        case .suspended: "suspended"
        case .running: "running"
        case .canceling: "canceling"
        case .completed: "completed"
        }
    }
}

/// The task state machine as a value: each transition returns what the owner must do, and the owner
/// does it after the state has changed (under its lock for ordering, never calling user code there).
struct TaskStateMachine {
    private(set) var state: TaskState = .suspended
    private(set) var hasStarted = false

    enum ResumeAction: Equatable {
        case none
        /// First resume: hand the transfer to the engine.
        case start
        /// Resume after a suspend: unpause the transfer.
        case unpause
    }

    enum CancelAction: Equatable {
        case none
        /// Never started: complete with `cancelled` without touching the engine.
        case completeWithoutTransfer
        /// Started: stop the transfer; it completes with `cancelled`.
        case stopTransfer
    }

    mutating func resume() -> ResumeAction {
        guard state == .suspended else { return .none }
        state = .running
        if hasStarted { return .unpause }
        hasStarted = true
        return .start
    }

    /// Returns whether a running transfer must be paused.
    mutating func suspend() -> Bool {
        guard state == .running else { return false }
        state = .suspended
        return true
    }

    mutating func cancel() -> CancelAction {
        guard state == .running || state == .suspended else { return .none }
        state = .canceling
        return hasStarted ? .stopTransfer : .completeWithoutTransfer
    }

    /// Marks the task completed. Returns whether it had been cancelled, or `nil` if already completed.
    mutating func complete() -> Bool? {
        guard state != .completed else { return nil }
        let wasCancelled = state == .canceling
        state = .completed
        return wasCancelled
    }
}
