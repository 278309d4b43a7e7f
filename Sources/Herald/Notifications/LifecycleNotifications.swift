import Foundation
import HeraldNotifications
import Instrumentation

/// The payload of ``HeraldNotifications/NotificationName/taskDidResume`` and
/// ``HeraldNotifications/NotificationName/taskDidSuspend``.
public struct TaskLifecycleEvent: Sendable {
    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// When the state changed.
    public let date: Date
    /// The task's request: method, redacted URL, headers and trace context.
    public let request: RequestSummary

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - taskIdentifier: The task's identifier.
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - date: When the state changed.
    ///   - request: The task's request.
    public init(
        taskIdentifier: Int,
        sessionIdentifier: Int,
        date: Date,
        request: RequestSummary
    ) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.date = date
        self.request = request
    }
}

/// The payload of ``HeraldNotifications/NotificationName/taskDidComplete``: everything AFNetworking's
/// userInfo keys carried, typed, plus the response, the final URL and curl's metrics.
public struct TaskCompletion: Sendable {
    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// When the task completed.
    public let date: Date
    /// The task's request as it was created: method, redacted URL, headers and trace context (the URL
    /// after redirects is ``finalURL``).
    public let request: RequestSummary
    /// The serializer that produced ``serializedResponse`` (AF's `…ResponseSerializerKey`).
    public let responseSerializer: any ResponseSerializer
    /// The response body of a data task (AF's `…ResponseDataKey`); `nil` when nothing arrived.
    public let responseData: Data?
    /// Where a download task's file ended up (AF's `…AssetPathKey`); `nil` for data tasks.
    public let assetPath: URL?
    /// The serializer's output on success (AF's `…SerializedResponseKey`).
    public let serializedResponse: (any Sendable)?
    /// The transport or serialization error, if any (AF's `…ErrorKey`).
    public let error: HeraldError?
    /// The response head, when one arrived. A user name or password in its URL is redacted (`***`), as in
    /// ``request``.
    public let response: HTTPResponse?
    /// The URL the final response came from, after redirects, a user name or password in it redacted (`***`).
    public let finalURL: URL?
    /// curl's timings and byte counts; `nil` when the task never reached the network.
    public let metrics: TransferMetrics?
    /// Where the response came from: ``ResponseSource/network``, ``ResponseSource/cache`` (no network at all,
    /// so ``metrics`` is `nil`) or ``ResponseSource/revalidated`` (a `304` confirmed the stored response;
    /// ``metrics`` are the conditional request's).
    public let responseSource: ResponseSource
    /// Whether a download's file was moved to the destination its `destination` closure or the session's
    /// `downloadTaskDidFinishDownloading` hook chose (``assetPath`` is then that destination); `false` when it
    /// stayed in the session's temporary folder (no destination, or the move failed) and for data tasks.
    public let fileWasMoved: Bool

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - taskIdentifier: The task's identifier.
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - date: When the task completed.
    ///   - request: The task's request.
    ///   - responseSerializer: The serializer that ran.
    ///   - responseData: A data task's body.
    ///   - assetPath: Where a download's file ended up.
    ///   - serializedResponse: The serializer's output on success.
    ///   - error: The error the task completed with.
    ///   - response: The response head.
    ///   - finalURL: The URL of the final response.
    ///   - metrics: curl's timings and byte counts.
    ///   - responseSource: Where the response came from; default ``ResponseSource/network``.
    ///   - fileWasMoved: Whether a download's file was moved to its destination; default `false`.
    public init(
        taskIdentifier: Int,
        sessionIdentifier: Int,
        date: Date,
        request: RequestSummary,
        responseSerializer: any ResponseSerializer,
        responseData: Data?,
        assetPath: URL?,
        serializedResponse: (any Sendable)?,
        error: HeraldError?,
        response: HTTPResponse?,
        finalURL: URL?,
        metrics: TransferMetrics?,
        responseSource: ResponseSource = .network,
        fileWasMoved: Bool = false
    ) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.date = date
        self.request = request
        self.responseSerializer = responseSerializer
        self.responseData = responseData
        self.assetPath = assetPath
        self.serializedResponse = serializedResponse
        self.error = error
        self.response = response
        self.finalURL = finalURL
        self.metrics = metrics
        self.responseSource = responseSource
        self.fileWasMoved = fileWasMoved
    }
}

/// The payload of ``HeraldNotifications/NotificationName/sessionDidInvalidate``.
public struct SessionInvalidation: Sendable {
    /// The session's identifier.
    public let sessionIdentifier: Int
    /// When the session finished invalidating.
    public let date: Date
    /// The error that caused the invalidation, if it had one (AFNetworking dropped it).
    public let error: HeraldError?

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    public init(
        sessionIdentifier: Int,
        date: Date,
        error: HeraldError?
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.date = date
        self.error = error
    }
}

/// The payload of ``HeraldNotifications/NotificationName/downloadDidFailToMoveFile``.
public struct DownloadMoveFailure: Sendable {
    /// The download task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The owning session's identifier, unique within the process.
    public let sessionIdentifier: Int
    /// When the move failed.
    public let date: Date
    /// The download's request: method, redacted URL, headers and trace context.
    public let request: RequestSummary
    /// The error, code ``HeraldError/Code/downloadMoveFailed``, with the file system's error as
    /// ``HeraldError/underlying`` (AFNetworking passed only `error.userInfo`).
    public let error: HeraldError
    /// The temporary file holding the whole download. It is **kept**: the bytes are yours to move.
    public let sourceURL: URL
    /// Where the `destination` closure asked the file to go.
    public let destinationURL: URL

    /// Creates a payload; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - taskIdentifier: The download task's identifier.
    ///   - sessionIdentifier: The owning session's identifier.
    ///   - date: When the move failed.
    ///   - request: The download's request.
    ///   - error: The failure, code ``HeraldError/Code/downloadMoveFailed``.
    ///   - sourceURL: The kept temporary file.
    ///   - destinationURL: Where the file was meant to go.
    public init(
        taskIdentifier: Int,
        sessionIdentifier: Int,
        date: Date,
        request: RequestSummary,
        error: HeraldError,
        sourceURL: URL,
        destinationURL: URL
    ) {
        self.taskIdentifier = taskIdentifier
        self.sessionIdentifier = sessionIdentifier
        self.date = date
        self.request = request
        self.error = error
        self.sourceURL = sourceURL
        self.destinationURL = destinationURL
    }
}

extension NotificationName where UserInfo == TaskLifecycleEvent {
    /// A task really went from suspended to running (`herald.task.resume`). Object: the task.
    public static let taskDidResume = NotificationName<TaskLifecycleEvent>("herald.task.resume")
    /// A task really went from running to suspended (`herald.task.suspend`). Object: the task.
    public static let taskDidSuspend = NotificationName<TaskLifecycleEvent>("herald.task.suspend")
}

extension NotificationName where UserInfo == TaskCompletion {
    /// A task completed, after its completion handler ran (`herald.task.complete`). Object: the task.
    /// Posted exactly once per task, whatever ended it.
    public static let taskDidComplete = NotificationName<TaskCompletion>("herald.task.complete")
}

extension NotificationName where UserInfo == SessionInvalidation {
    /// A session finished invalidating, after its last task completed (`herald.session.invalidate`).
    /// Object: the session. Posted exactly once per session.
    public static let sessionDidInvalidate = NotificationName<SessionInvalidation>("herald.session.invalidate")
}

extension NotificationName where UserInfo == DownloadMoveFailure {
    /// A finished download could not be moved to its destination (`herald.download.move-file-failed`).
    /// Object: the download task, or, for a download task a data task became, that data task, as for the
    /// other lifecycle notifications. Posted at most once per task, before its `taskDidComplete`; the
    /// temporary file named in the payload is kept.
    public static let downloadDidFailToMoveFile = NotificationName<DownloadMoveFailure>(
        "herald.download.move-file-failed")
}
