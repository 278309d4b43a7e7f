import Foundation

// AF's block properties for the session, every task and data tasks; the request-shaping, authentication
// and download ones are in the sibling `SessionManager+…Hooks.swift` files. All of them are stored in one
// `SessionHooks` value. Each is optional and read when the event happens, except where a doc comment says
// it is read when a task starts.
extension SessionManager {
    /// AF's `sessionDidBecomeInvalid`: called once when invalidation has finished — after
    /// ``invalidate(cancelingTasks:)`` and after the last task's completion handler and `taskDidComplete`
    /// — with the error the invalidation had, if any (today always `nil`).
    ///
    /// Runs on the session's serial event queue, immediately **before** `sessionDidInvalidate` is posted
    /// (AF's order), so an observer of that notification sees the hook's effects. It must not block. A
    /// session released without being invalidated calls neither. Default `nil`.
    public var sessionDidBecomeInvalid: (@Sendable (_ session: SessionManager, _ error: HeraldError?) -> Void)? {
        get { readHooks { $0.sessionDidBecomeInvalid } }
        set { updateHooks { $0.sessionDidBecomeInvalid = newValue } }
    }

    /// AF's `taskDidSendBodyData`: called after each piece of a request body is handed to the connection,
    /// with the bytes just sent, the total so far and the body's length (`nil` for a streamed body of
    /// unknown length).
    ///
    /// Runs on ``completionQueue``, in order, before the task's completion handler. After a rewind (a
    /// 307/308 redirect, an authentication round-trip) the total counts again from the start of the body.
    /// Default `nil`.
    public var taskDidSendBodyData:
        (
            @Sendable (
                _ task: SessionTask, _ bytesSent: Int64, _ totalBytesSent: Int64, _ totalBytesExpectedToSend: Int64?
            ) -> Void
        )?
    {
        get { readHooks { $0.taskDidSendBodyData } }
        set { updateHooks { $0.taskDidSendBodyData = newValue } }
    }

    /// AF's `taskDidComplete`: called once per task when it completes, with the **transfer's** error —
    /// `nil` for any HTTP response whatever its status; cancellation, timeouts and connection failures
    /// otherwise. Serializer and file-move errors are not transfer errors: they reach the completion
    /// handler and `taskDidComplete`'s payload.
    ///
    /// Runs on ``completionQueue`` immediately **before** the task's completion handler (AFNetworking calls
    /// the block as soon as the transfer ends, while the completion handler still waits behind
    /// serialization), and so before the `taskDidComplete` notification. For a data task that became a
    /// download it receives the data task. Default `nil`.
    public var taskDidComplete: (@Sendable (_ task: SessionTask, _ error: HeraldError?) -> Void)? {
        get { readHooks { $0.taskDidComplete } }
        set { updateHooks { $0.taskDidComplete = newValue } }
    }

    /// AF's `dataTaskDidReceiveResponse`: decides what a data task (or upload task) does with its final
    /// response: ``ResponseDisposition/allow`` it, ``ResponseDisposition/cancel`` the task, or
    /// ``ResponseDisposition/becomeDownload``.
    ///
    /// The hook is called when the response's head arrives, before any of its body: a server that sends its
    /// head and then waits is answered at once. The transfer keeps the body's first bytes waiting until the
    /// hook answers (for a response without a body, its completion waits). The hook runs on the task's
    /// hook queue, never on the engine's loop thread nor on ``completionQueue``, so it may take its time: it
    /// holds back its own task only, while other transfers keep moving bytes and other tasks' redirects,
    /// retries and completions go on. Its answer is not ordered with other tasks' hooks. The answer then
    /// takes effect on the loop thread. A user ``SessionTask/suspend()`` while the hook runs stays in
    /// force: `.allow` does not continue a suspended task, its ``SessionTask/resume()`` does. A
    /// ``SessionTask/cancel()`` meanwhile wins over any answer. A response served from ``SessionConfiguration/responseCache``
    /// does not call it, nor does a redirect Herald follows, nor a `401` with a Basic or Digest challenge that
    /// Herald answers with a credential. A redirect or a `401` that becomes the task's result after all (the
    /// redirection hook returned `nil`, no credential answered the challenge) is shown then, once its body has
    /// arrived: `.allow` and `.cancel` work as for any response, and `.becomeDownload` fails the task with
    /// ``HeraldError/Code/invalidRequest`` (the body is already in memory).
    ///
    /// Herald reads this property when a task starts: set it before resuming the tasks it should see.
    /// Tasks made by the `async` ``data(for:)`` and ``upload(for:from:progress:)`` forms return their body
    /// in memory, so `.becomeDownload` fails them with ``HeraldError/Code/invalidRequest``. Default `nil`
    /// (every response allowed, without pausing).
    public var dataTaskDidReceiveResponse:
        (@Sendable (_ dataTask: DataTask, _ response: HTTPResponse) -> ResponseDisposition)?
    {
        get { readHooks { $0.dataTaskDidReceiveResponse } }
        set { updateHooks { $0.dataTaskDidReceiveResponse = newValue } }
    }

    /// AF's `dataTaskDidBecomeDownloadTask`: called when ``dataTaskDidReceiveResponse`` answered
    /// ``ResponseDisposition/becomeDownload``, with the data task and the ``DownloadTask`` it became.
    ///
    /// The download task is the same task under another kind: it has the data task's
    /// ``SessionTask/taskIdentifier``, state, progress objects and completion handler, and replaces the
    /// data task in ``tasks`` and ``downloadTasks`` (it leaves ``dataTasks``). Controlling either one
    /// (``SessionTask/suspend()``, ``SessionTask/resume()``, ``SessionTask/cancel()``,
    /// ``DownloadTask/cancel(byProducingResumeData:)``) controls the transfer. The body is written to the
    /// download task's ``DownloadTask/temporaryURL``; when it is complete, ``downloadTaskDidFinishDownloading``
    /// chooses where it goes (without that hook it stays there, and is yours to move or delete). The
    /// original completion handler runs once, with the **file URL** as `responseObject` (the serializer is
    /// not applied), or with the error. Download hooks (``downloadTaskDidWriteData``) report the body.
    ///
    /// Lifecycle notifications keep naming the data task, which the caller holds: it was announced by
    /// `taskDidResume`, and it is announced by exactly one `taskDidComplete`, whose payload has the
    /// file's ``TaskCompletion/assetPath`` and no response data.
    ///
    /// Runs right after ``dataTaskDidReceiveResponse`` returned, on the same queue (the hook queue), before any body
    /// byte is written. Default `nil`.
    public var dataTaskDidBecomeDownloadTask: (@Sendable (_ dataTask: DataTask, _ downloadTask: DownloadTask) -> Void)?
    {
        get { readHooks { $0.dataTaskDidBecomeDownloadTask } }
        set { updateHooks { $0.dataTaskDidBecomeDownloadTask = newValue } }
    }

    /// AF's `dataTaskDidReceiveData`: called with each piece of a data task's (or upload task's) response
    /// body as it arrives — a copy of the bytes, exactly as collected (after content decoding).
    ///
    /// Runs on ``completionQueue``, in order, before the task's completion handler; the task still collects
    /// the whole body for its completion. Not called for a data task that became a download, for a
    /// response served from ``SessionConfiguration/responseCache``, nor for the body of a redirect Herald
    /// follows or of a `401` it answers with a credential. The body of a redirect or a `401` that becomes the
    /// task's result after all comes in one piece, once it has all arrived (see ``dataTaskDidReceiveResponse``).
    ///
    /// Herald reads this property when a task starts: set it before resuming the tasks it should see.
    /// Without it the engine does no per-chunk work for it at all. Default `nil`.
    public var dataTaskDidReceiveData: (@Sendable (_ dataTask: DataTask, _ data: Data) -> Void)? {
        get { readHooks { $0.dataTaskDidReceiveData } }
        set { updateHooks { $0.dataTaskDidReceiveData = newValue } }
    }

    /// AF's `dataTaskWillCacheResponse`: called before a response is stored in
    /// ``SessionConfiguration/responseCache``, with the entry Herald proposes; return it, a changed entry,
    /// or `nil` to store nothing.
    ///
    /// Only responses the cache may keep reach it (see ``ResponseCache``). Runs on ``completionQueue``
    /// before the task's completion handler, so a task made from that handler already finds the stored
    /// response. Default `nil` (store the proposal).
    public var dataTaskWillCacheResponse:
        (@Sendable (_ dataTask: DataTask, _ proposedResponse: CachedResponse) -> CachedResponse?)?
    {
        get { readHooks { $0.dataTaskWillCacheResponse } }
        set { updateHooks { $0.dataTaskWillCacheResponse = newValue } }
    }
}
