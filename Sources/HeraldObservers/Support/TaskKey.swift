import Herald

/// Identifies one task across sessions: a task identifier is unique only within its session, so
/// observers that watch several sessions key their state by both.
public struct TaskKey: Hashable, Sendable, CustomStringConvertible {
    /// The owning session's identifier.
    public let sessionIdentifier: Int
    /// The task's identifier within its session.
    public let taskIdentifier: Int

    /// Creates a key.
    /// - Parameters:
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - taskIdentifier: The task's identifier within its session.
    public init(sessionIdentifier: Int, taskIdentifier: Int) {
        self.sessionIdentifier = sessionIdentifier
        self.taskIdentifier = taskIdentifier
    }

    /// The key of the task a resume or suspend event is about.
    /// - Parameter event: A `taskDidResume` or `taskDidSuspend` payload.
    public init(_ event: TaskLifecycleEvent) {
        self.init(sessionIdentifier: event.sessionIdentifier, taskIdentifier: event.taskIdentifier)
    }

    /// The key of the task a completion is about.
    /// - Parameter completion: A `taskDidComplete` payload.
    public init(_ completion: TaskCompletion) {
        self.init(sessionIdentifier: completion.sessionIdentifier, taskIdentifier: completion.taskIdentifier)
    }

    /// The key of a task an observation left open.
    /// - Parameter task: One of `ObservationEnd.openTasks`.
    public init(_ task: ObservationEnd.OpenTask) {
        self.init(sessionIdentifier: task.sessionIdentifier, taskIdentifier: task.taskIdentifier)
    }

    /// The key of the task a retry is about.
    /// - Parameter retry: A `taskWillRetry` payload.
    public init(_ retry: TaskRetry) {
        self.init(sessionIdentifier: retry.sessionIdentifier, taskIdentifier: retry.taskIdentifier)
    }

    /// The key of the task a wait for connectivity is about.
    /// - Parameter wait: A `taskIsWaitingForConnectivity` payload.
    public init(_ wait: TaskConnectivityWait) {
        self.init(sessionIdentifier: wait.sessionIdentifier, taskIdentifier: wait.taskIdentifier)
    }

    /// `"session/task"`, such as `"3/17"`.
    public var description: String { "\(sessionIdentifier)/\(taskIdentifier)" }
}
