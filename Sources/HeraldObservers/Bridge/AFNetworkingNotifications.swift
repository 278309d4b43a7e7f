import Foundation

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
