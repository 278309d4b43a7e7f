/// Where a task is in its life.
///
/// `suspended` (new tasks start here) → `running` ⇄ `suspended`; `running`/`suspended` → `canceling` →
/// `completed` when a cancel stops a transfer in the engine; `running`/`suspended` → `completed` when the task
/// finishes, fails while suspended, or is cancelled with no transfer in the engine. Every call on a completed
/// task does nothing.
public enum TaskState: Sendable, Hashable, CustomStringConvertible {
    /// Created or suspended: no bytes move.
    case suspended
    /// Transferring.
    case running
    /// Cancelled while a transfer was in the engine; the completion is on its way.
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
