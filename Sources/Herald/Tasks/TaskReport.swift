import Foundation

/// What a task reports of its transfers: the last response head, the final metrics and the error it
/// completed with, a download's resume data after a failure, and the stale cache entry its request
/// revalidates. Part of ``TaskStateMachine``, guarded
/// by the task's lock, read-only from outside: the machine's transitions write it.
struct TaskReport {
    /// The last response head that arrived (a redirect's or a challenge's too, until the next one).
    var response: HTTPResponse?
    /// The final transfer's metrics, once the task has completed after reaching the network.
    var metrics: TransferMetrics?
    /// Whether ``metrics`` are the final transfer's, which end the hop metrics after the earlier hops'
    /// (``TaskHops/metrics``), rather than a repeat of the last of those.
    var metricsEndHops = false
    /// The error the task completed with, once the completion handler has been given it.
    var error: HeraldError?
    /// A download task's resume data after a failure part-way (see ``DownloadTask/resumeDataAfterFailure``).
    var resumeDataAfterFailure: Data?
    /// The stale cache entry this task's request revalidates: a `304` answer completes from it.
    var revalidating: CachedResponse?
}
