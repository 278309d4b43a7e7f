import Foundation

/// What a data task does with a response, as answered by
/// ``SessionManager/dataTaskDidReceiveResponse``: URLSession's `ResponseDisposition`.
public enum ResponseDisposition: Sendable, Hashable {
    /// Receive the body as usual.
    case allow
    /// Stop the transfer: the task completes with ``HeraldError/Code/cancelled``, as after
    /// ``SessionTask/cancel()``.
    case cancel
    /// Write the body to a temporary file instead of memory: the data task becomes a ``DownloadTask``
    /// (see ``SessionManager/dataTaskDidBecomeDownloadTask``).
    case becomeDownload
}

/// The session's hooks other than the download ones, kept together in its state.
struct SessionHooks {
    var sessionDidBecomeInvalid: (@Sendable (SessionManager, HeraldError?) -> Void)?
    var taskDidSendBodyData: (@Sendable (SessionTask, Int64, Int64, Int64?) -> Void)?
    var taskDidComplete: (@Sendable (SessionTask, HeraldError?) -> Void)?
    var dataTaskDidReceiveResponse: (@Sendable (DataTask, HTTPResponse) -> ResponseDisposition)?
    var dataTaskDidBecomeDownloadTask: (@Sendable (DataTask, DownloadTask) -> Void)?
    var dataTaskDidReceiveData: (@Sendable (DataTask, Data) -> Void)?
    var dataTaskWillCacheResponse: (@Sendable (DataTask, CachedResponse) -> CachedResponse?)?
}
