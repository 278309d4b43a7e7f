import Foundation
import Herald

/// AFNetworking's notification names and `userInfo` keys, with AFNetworking's string values, for code that
/// observes them on Foundation's `NotificationCenter` (see ``FoundationNotificationBridge``).
public enum AFNetworkingNotifications {
    /// `AFNetworkingTaskDidResumeNotification`: `com.alamofire.networking.task.resume`.
    public static let taskDidResume = Notification.Name("com.alamofire.networking.task.resume")
    /// `AFNetworkingTaskDidSuspendNotification`: `com.alamofire.networking.task.suspend`.
    public static let taskDidSuspend = Notification.Name("com.alamofire.networking.task.suspend")
    /// `AFNetworkingTaskDidCompleteNotification`: `com.alamofire.networking.task.complete`.
    public static let taskDidComplete = Notification.Name("com.alamofire.networking.task.complete")
    /// `AFURLSessionDidInvalidateNotification`: `com.alamofire.networking.session.invalidate`.
    public static let sessionDidInvalidate = Notification.Name("com.alamofire.networking.session.invalidate")
    /// `AFURLSessionDownloadTaskDidFailToMoveFileNotification`:
    /// `com.alamofire.networking.session.download.file-manager-error`.
    public static let downloadTaskDidFailToMoveFile = Notification.Name(
        "com.alamofire.networking.session.download.file-manager-error")
    /// `AFURLSessionDownloadTaskDidMoveFileSuccessfullyNotification` (AFNetworking 4):
    /// `com.alamofire.networking.session.download.file-manager-succeed`.
    public static let downloadTaskDidMoveFileSuccessfully = Notification.Name(
        "com.alamofire.networking.session.download.file-manager-succeed")

    /// `AFNetworkingReachabilityDidChangeNotification`: `com.alamofire.networking.reachability.change`.
    public static let reachabilityDidChange = Notification.Name("com.alamofire.networking.reachability.change")

    /// `AFNetworkingReachabilityNotificationStatusItem`: the new status as AFNetworking's
    /// `AFNetworkReachabilityStatus` raw value (an `Int`, see ``reachabilityStatusValue(_:)``).
    public static let reachabilityStatusItemKey = "AFNetworkingReachabilityNotificationStatusItem"

    /// AFNetworking's `AFNetworkReachabilityStatus` raw value for `status`: `-1` unknown, `0` not reachable,
    /// `1` through a cellular modem (`ReachableViaWWAN`), `2` through anything else (`ReachableViaWiFi`, which
    /// on Apple platforms means "not cellular": ethernet, wireless, a VPN).
    /// - Parameter status: A Herald status.
    /// - Returns: The raw value AFNetworking's observers compare against.
    public static func reachabilityStatusValue(_ status: NetworkReachabilityStatus) -> Int {
        switch status {
        case .unknown: -1
        case .notReachable: 0
        case .reachable(let interface): interface.kind == .cellular ? 1 : 2
        }
    }

    /// `AFNetworkingTaskDidCompleteResponseSerializerKey`: the serializer used (an `any ResponseSerializer`).
    public static let responseSerializerKey = "com.alamofire.networking.task.complete.responseserializer"
    /// `AFNetworkingTaskDidCompleteResponseDataKey`: the response body (`Data`), for tasks without an asset path.
    public static let responseDataKey = "com.alamofire.networking.complete.finish.responsedata"
    /// `AFNetworkingTaskDidCompleteSerializedResponseKey`: the serializer's output, on success only.
    public static let serializedResponseKey = "com.alamofire.networking.task.complete.serializedresponse"
    /// `AFNetworkingTaskDidCompleteAssetPathKey`: where a download's file is (`URL`).
    public static let assetPathKey = "com.alamofire.networking.task.complete.assetpath"
    /// `AFNetworkingTaskDidCompleteErrorKey`: the error (a `HeraldError`).
    public static let errorKey = "com.alamofire.networking.task.complete.error"
    /// `AFNetworkingTaskDidCompleteSessionTaskMetrics` (AFNetworking 4): curl's metrics (a `TransferMetrics`).
    public static let sessionTaskMetricsKey = "com.alamofire.networking.complete.sessiontaskmetrics"
}
