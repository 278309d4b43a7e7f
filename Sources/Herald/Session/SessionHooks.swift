import Foundation
import Instrumentation

/// Every hook of a session — AF's block properties — in one value, kept in the session's locked state.
///
/// The public properties (`SessionManager+Hooks.swift` and its siblings) read and write it under the lock,
/// and callers copy the closure they need out of it before calling: a hook never runs under the lock.
struct SessionHooks {
    // Session
    var sessionDidBecomeInvalid: (@Sendable (SessionManager, HeraldError?) -> Void)?

    // Every task
    var taskDidSendBodyData: (@Sendable (SessionTask, Int64, Int64, Int64?) -> Void)?
    var taskDidComplete: (@Sendable (SessionTask, HeraldError?) -> Void)?
    var taskNeedNewBodyStream: (@Sendable (SessionTask) -> BodyStream?)?
    var taskWillPerformHTTPRedirection: RedirectionHook?
    var taskTraceContext: (@Sendable (Request, ServiceContext?) -> ServiceContext?)?
    var taskDidReceiveAuthenticationChallenge: TaskAuthenticationChallengeHandler?
    var sessionDidReceiveAuthenticationChallenge: SessionAuthenticationChallengeHandler?

    // Data and upload tasks
    var dataTaskDidReceiveResponse: (@Sendable (DataTask, HTTPResponse) -> ResponseDisposition)?
    var dataTaskDidBecomeDownloadTask: (@Sendable (DataTask, DownloadTask) -> Void)?
    var dataTaskDidReceiveData: (@Sendable (DataTask, Data) -> Void)?
    var dataTaskWillCacheResponse: (@Sendable (DataTask, CachedResponse) -> CachedResponse?)?

    // Download tasks
    var downloadTaskDidFinishDownloading: (@Sendable (DownloadTask, URL, HTTPResponse) -> URL?)?
    var downloadTaskDidWriteData: (@Sendable (DownloadTask, Int64, Int64, Int64?) -> Void)?
    var downloadTaskDidResume: (@Sendable (DownloadTask, Int64, Int64?) -> Void)?
}
