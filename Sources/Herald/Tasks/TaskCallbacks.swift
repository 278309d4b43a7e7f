import Foundation

/// The caller's callbacks for one task: its completion handler and its progress handlers. Part of
/// ``TaskStateMachine``, guarded by the task's lock: given while the task is made, extended by progress
/// observers (``TransferProgress/Updates``) until the task completes, and handed out exactly once, by the
/// transition that reports the completion.
struct TaskCallbacks: Sendable {
    /// Runs once, with the serialized outcome, on the completion queue.
    var completion: TaskCompletionHandler?
    /// Coalesced request-body progress.
    var uploadProgress: SessionTask.ProgressHandler?
    /// Coalesced response-body progress.
    var downloadProgress: SessionTask.ProgressHandler?
    /// A download task's ``DownloadTask/cancel(byProducingResumeData:)`` handler: accepted only before the
    /// task completes, and answered with its completion, before the completion handler.
    var resumeData: (@Sendable (Data?) -> Void)?
    /// Whether `completion` only hands the result to an `async` caller that awaits it on the global executor
    /// (``SessionManager/data(for:)``): it resumes a continuation, which enqueues the caller and runs no code
    /// of the caller's, so the task may complete where its transfer ended when nothing else of the caller's
    /// waits on the completion queue (``SessionManager/complete(_:with:)``).
    var answersAwaitingCaller = false

    /// `first`, then `second`; `second` alone when there is no `first`.
    static func chain(
        _ first: SessionTask.ProgressHandler?, _ second: @escaping SessionTask.ProgressHandler
    ) -> SessionTask.ProgressHandler {
        guard let first else { return second }
        return { progress in
            first(progress)
            second(progress)
        }
    }
}
