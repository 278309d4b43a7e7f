import Foundation
import Herald
import HeraldNotifications

/// Re-posts Herald's lifecycle on a Foundation `NotificationCenter` under AFNetworking's names and
/// `userInfo` keys, so observers ported from iOS keep working: opt in by registering it.
///
/// ```swift
/// let bridge = FoundationNotificationBridge(center: .default)
/// let bridging = bridge.observe(session.notificationCenter)
/// ```
///
/// | Herald | posted as (``AFNetworkingNotifications``) | `object` | `userInfo` |
/// |---|---|---|---|
/// | `taskDidResume` | `taskDidResume` | the task | none |
/// | `taskDidSuspend` | `taskDidSuspend` | the task | none |
/// | `taskDidComplete` | `taskDidComplete` | the task | the serializer; the body (`responseDataKey`) or, for a download, its file (`assetPathKey`); on success only (AFNetworking also posted a serializer's output beside its error) the serialized response, which for a download is its file's URL and for a task without a serializer its body, and none when the serializer's output is empty (`nil`); the error; the metrics |
/// | `sessionDidInvalidate` | `sessionDidInvalidate` | the session | none (AFNetworking's had none); the error under `errorKey` if the invalidation had one, which no invalidation has today |
/// | `downloadDidFailToMoveFile` | `downloadTaskDidFailToMoveFile` | the download task; for a download a data task became, that data task | `NSUnderlyingErrorKey`: the error the move failed with, a `POSIXError` such as `ENOENT` or `ENOSPC` when a system call failed, or a Foundation `CocoaError` when `FileManager` failed to make the destination's folders or to copy the file to another file system (the `HeraldError` when it carries none); `NSFilePathErrorKey`: the kept temporary file; `NSURLErrorKey`: the destination |
/// | `reachabilityDidChange` | `reachabilityDidChange` | the `NetworkReachability` | `reachabilityStatusItemKey`: AFNetworking's status number (``AFNetworkingNotifications/reachabilityStatusValue(_:)``); `reachabilityStatusKey`: Herald's `NetworkReachabilityStatus` |
///
/// A download whose file was moved to the destination its `destination` closure or
/// `downloadTaskDidFinishDownloading` chose (`TaskCompletion.fileWasMoved`) also gets AFNetworking 4's
/// `downloadTaskDidMoveFileSuccessfully` (object the task, no `userInfo`) just before its `taskDidComplete`;
/// one left in the temporary folder doesn't, as in AFNetworking. `taskWillRetry`,
/// `taskIsWaitingForConnectivity` and `taskDidEndWaitingForConnectivity` have no AFNetworking counterpart and
/// are not re-posted. Reachability changes
/// reach the bridge when the monitor posts on the center the bridge observes (`NetworkReachability`
/// posts on `NotificationHub.shared` unless given another).
///
/// Each notification is posted from wherever the bridge is called: with the default `.posting`
/// delivery, synchronously on the session's event queue, in Herald's causal order, so a Foundation
/// observer registered with `queue: nil` sees a task's resume before its completion. AFNetworking posted
/// on the main queue; register the bridge with `.queue(.main)` to get that — on Linux only if the main
/// thread runs the main queue (`dispatchMain()` or a `RunLoop`). The same holds for a Foundation observer
/// added with `queue: .main`: `NotificationCenter` makes the poster, here the session's event queue, wait for
/// the block, so where nothing drains the main queue the session's notifications stop for good; use
/// `queue: nil` there.
public final class FoundationNotificationBridge: SessionObserver {
    /// Where notifications are re-posted.
    public let center: NotificationCenter

    /// The `userInfo` key under which ``reachabilityDidChange(_:)`` also passes Herald's own status (a
    /// `NetworkReachabilityStatus`, with the interface), beside AFNetworking's number.
    public static let reachabilityStatusKey = "herald.reachability.status"

    /// Creates a bridge.
    /// - Parameter center: The Foundation center to post on; default `NotificationCenter.default`.
    public init(center: NotificationCenter = .default) {
        self.center = center
    }

    /// Posts `com.alamofire.networking.task.resume` with the task.
    /// - Parameter notification: `taskDidResume`.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        center.post(name: AFNetworkingNotifications.taskDidResume, object: notification.object)
    }

    /// Posts `com.alamofire.networking.task.suspend` with the task.
    /// - Parameter notification: `taskDidSuspend`.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {
        center.post(name: AFNetworkingNotifications.taskDidSuspend, object: notification.object)
    }

    /// Posts `com.alamofire.networking.task.complete` with the task and AFNetworking's keys (preceded, for
    /// a download whose file was moved to its destination, by `…file-manager-succeed`).
    /// - Parameter notification: `taskDidComplete`.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let completion = notification.userInfo
        var userInfo: [AnyHashable: Any] = [
            AFNetworkingNotifications.responseSerializerKey: completion.responseSerializer
        ]
        if let assetPath = completion.assetPath {
            userInfo[AFNetworkingNotifications.assetPathKey] = assetPath
            // As AFNetworking posts it: only after a move to a destination that succeeded, whatever came after.
            if completion.fileWasMoved {
                center.post(
                    name: AFNetworkingNotifications.downloadTaskDidMoveFileSuccessfully, object: notification.object)
            }
        } else if let data = completion.responseData {
            userInfo[AFNetworkingNotifications.responseDataKey] = data
        }
        if let error = completion.error {
            userInfo[AFNetworkingNotifications.errorKey] = error
        } else if let serialized = completion.serializedResponse {
            // A serializer's empty output is left out, as AFNetworking leaves out a nil response object.
            if let value = Self.unwrapped(serialized) {
                userInfo[AFNetworkingNotifications.serializedResponseKey] = value
            }
        } else if let unserialized = completion.assetPath.map({ $0 as any Sendable }) ?? completion.responseData {
            // AFNetworking posts a download's file URL as its serialized response, and its default serializer's
            // output is the body.
            userInfo[AFNetworkingNotifications.serializedResponseKey] = unserialized
        }
        if let metrics = completion.metrics {
            userInfo[AFNetworkingNotifications.sessionTaskMetricsKey] = metrics
        }
        center.post(name: AFNetworkingNotifications.taskDidComplete, object: notification.object, userInfo: userInfo)
    }

    /// `value`, or `nil` when it is an `Optional` holding none: a serializer whose output is optional (JSON's, for
    /// an empty body) gives an empty one, which AFNetworking would have left out.
    static func unwrapped(_ value: any Sendable) -> (any Sendable)? {
        if let optional = value as? any OptionalValue, optional.holdsNone { return nil }
        return value
    }

    /// Posts `com.alamofire.networking.session.invalidate` with the session.
    /// - Parameter notification: `sessionDidInvalidate`.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {
        let userInfo = notification.userInfo.error.map {
            [AFNetworkingNotifications.errorKey: $0] as [AnyHashable: Any]
        }
        center.post(
            name: AFNetworkingNotifications.sessionDidInvalidate, object: notification.object, userInfo: userInfo)
    }

    /// Posts `com.alamofire.networking.session.download.file-manager-error` with the notification's object (the
    /// download task, or the data task that became it), the error the move failed with, the kept file and the
    /// destination.
    /// - Parameter notification: `downloadDidFailToMoveFile`.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {
        let failure = notification.userInfo
        center.post(
            name: AFNetworkingNotifications.downloadTaskDidFailToMoveFile, object: notification.object,
            userInfo: [
                NSUnderlyingErrorKey: failure.error.underlying ?? failure.error,
                NSFilePathErrorKey: failure.sourceURL.path, NSURLErrorKey: failure.destinationURL,
            ])
    }

    /// Posts `com.alamofire.networking.reachability.change` with the monitor, AFNetworking's status number
    /// under `AFNetworkingReachabilityNotificationStatusItem`, and Herald's status under
    /// ``reachabilityStatusKey``.
    /// - Parameter notification: `reachabilityDidChange`.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {
        let status = notification.userInfo.status
        center.post(
            name: AFNetworkingNotifications.reachabilityDidChange, object: notification.object,
            userInfo: [
                AFNetworkingNotifications.reachabilityStatusItemKey: AFNetworkingNotifications.reachabilityStatusValue(
                    status),
                Self.reachabilityStatusKey: status,
            ])
    }
}

/// An `Optional` seen through `any Sendable`, to tell one holding none from a value.
protocol OptionalValue {
    /// Whether it holds none, through any number of `Optional`s.
    var holdsNone: Bool { get }
}

extension Optional: OptionalValue {
    var holdsNone: Bool {
        switch self {
        case .none: true
        case .some(let wrapped): (wrapped as? any OptionalValue)?.holdsNone ?? false
        }
    }
}
