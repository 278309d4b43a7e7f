import Foundation

// Completing a task: the machine decides whether the outcome completes the task (exactly once), waits for
// `resume()` (the task is suspended), or arrives too late; the session then serializes, runs the
// completion handler and posts `taskDidComplete`.
extension SessionTask {
    /// The metrics of every transfer the task ran, in order, once it has completed: one per redirect
    /// followed and per authentication round-trip, then the final one (the same as ``metrics``). Empty
    /// before completion and for a task that never reached the network.
    public var hopMetrics: [TransferMetrics] { core.withLock { $0.machine.hopMetrics } }

    /// Completes the task with `outcome`, exactly once whichever path gets here first.
    func completeTransfer(_ outcome: TransferOutcome) {
        transition { core -> ((), [TaskEffect]) in
            switch core.machine.complete(with: outcome) {
            case .none:
                return ((), [])
            case .hold:
                defer { core.holdWaiters = [] }
                return ((), core.holdWaiters.isEmpty ? [] : [.notify(core.holdWaiters)])
            case .finish(var outcome, let wasCancelled, let downloadTask):
                if wasCancelled, outcome.error?.code != .cancelled {
                    outcome.error = Self.cancellation(for: originalRequest.url)
                }
                // A data task that became a download completes as the download task that continues it,
                // whichever of the two curl told.
                return ((), [.finish(downloadTask ?? self, outcome)])
            }
        }
    }

    /// Records the final error and runs the completion handler. Completion queue.
    func runCompletionHandler(response: HTTPResponse?, object: (any Sendable)?, error: HeraldError?) {
        let (callbacks, upload, download) = core.withLock { core in
            let callbacks = core.machine.completionReported(error: error)
            // Objects made from here on are born finished.
            let upload = self.progress(upload: true, forHandler: callbacks.uploadProgress, in: &core)
            let download = self.progress(upload: false, forHandler: callbacks.downloadProgress, in: &core)
            core.progress.isFinished = true
            return (callbacks, upload, download)
        }
        upload?.finish(deliveringFinalUpdateTo: callbacks.uploadProgress)
        download?.finish(deliveringFinalUpdateTo: callbacks.downloadProgress)
        callbacks.completion?(response, object, error)
    }
}
