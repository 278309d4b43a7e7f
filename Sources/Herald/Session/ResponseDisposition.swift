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
