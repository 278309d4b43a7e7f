import Foundation
import HeraldNotifications

/// The payload of ``HeraldNotifications/NotificationName/reachabilityDidChange``: the new status and the one
/// before it.
public struct ReachabilityChange: Sendable {
    /// The status now.
    public let status: NetworkReachabilityStatus
    /// The status before this change (``NetworkReachabilityStatus/unknown`` for the first one after
    /// ``NetworkReachability/startMonitoring()``).
    public let previousStatus: NetworkReachabilityStatus
    /// The host the monitor follows, or `nil` for the network in general.
    public let host: String?
    /// When the change settled.
    public let date: Date

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - status: The status now.
    ///   - previousStatus: The status before.
    ///   - host: The host followed, or `nil`.
    ///   - date: When the change settled.
    public init(
        status: NetworkReachabilityStatus, previousStatus: NetworkReachabilityStatus, host: String?, date: Date
    ) {
        self.status = status
        self.previousStatus = previousStatus
        self.host = host
        self.date = date
    }
}

/// The payload of ``HeraldNotifications/NotificationName/taskIsWaitingForConnectivity``: a task of a session
/// with ``SessionConfiguration/waitsForConnectivity`` that found no network and waits for one.
public struct TaskConnectivityWait: Sendable {
    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// The task's request: method, credential-redacted URL, header fields and trace context.
    public let request: RequestSummary
    /// When the task began waiting (`taskIsWaitingForConnectivity`), or stopped because a network came back
    /// (`taskDidEndWaitingForConnectivity`).
    public let date: Date
    /// The failure that showed there was no network: ``HeraldError/Code/cannotConnect``,
    /// ``HeraldError/Code/cannotFindHost`` or ``HeraldError/Code/networkConnectionLost``.
    public let error: HeraldError

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - taskIdentifier: The task's identifier.
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - request: The task's request.
    ///   - date: When the task began waiting, or stopped.
    ///   - error: The failure that showed there was no network.
    public init(taskIdentifier: Int, sessionIdentifier: Int, request: RequestSummary, date: Date, error: HeraldError) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.request = request
        self.date = date
        self.error = error
    }
}

extension NotificationName where UserInfo == ReachabilityChange {
    /// A ``NetworkReachability`` monitor's status changed, after its debounce delay
    /// (`herald.reachability.change`). Object: the monitor.
    ///
    /// Posted once when monitoring starts (from ``NetworkReachabilityStatus/unknown`` to the first status
    /// read), then once per settled change, from the monitor's own serial queue, after its status-change
    /// handler ran: AFNetworking's `AFNetworkingReachabilityDidChangeNotification`.
    public static let reachabilityDidChange = NotificationName<ReachabilityChange>("herald.reachability.change")
}

extension NotificationName where UserInfo == TaskConnectivityWait {
    /// A task found no network and waits for one instead of failing (`herald.task.waiting-for-connectivity`):
    /// URLSession's `urlSession(_:taskIsWaitingForConnectivity:)`. Object: the task.
    ///
    /// Only for sessions with ``SessionConfiguration/waitsForConnectivity``; once per wait (URLSession calls its
    /// delegate for the first alone: a task whose network comes back and goes again waits, and is announced,
    /// again), between its `taskDidResume` and its `taskDidComplete`. The task stays one task: when a network
    /// comes back it posts ``taskDidEndWaitingForConnectivity`` and starts again without a second
    /// `taskDidResume`, and it completes once.
    public static let taskIsWaitingForConnectivity = NotificationName<TaskConnectivityWait>(
        "herald.task.waiting-for-connectivity")

    /// A network came back for a task that announced its wait with ``taskIsWaitingForConnectivity``, and its
    /// attempt starts again (`herald.task.waiting-for-connectivity.end`). Object: the task.
    ///
    /// Once per wait that ends so, after its `taskIsWaitingForConnectivity` and before the task's next wait or
    /// its `taskDidComplete`; not when the wait ends otherwise (the resource timeout, a cancel: `taskDidComplete` says so). Until it, the
    /// task moves no bytes; from it, the task is network activity again. The payload's
    /// ``TaskConnectivityWait/date`` is when the wait ended, its ``TaskConnectivityWait/error`` the failure
    /// that began it.
    public static let taskDidEndWaitingForConnectivity = NotificationName<TaskConnectivityWait>(
        "herald.task.waiting-for-connectivity.end")
}
