import Foundation
import HeraldEngine

// Completing a task: the machine decides whether the outcome completes the task (exactly once), waits for
// `resume()` (the task is suspended), or arrives too late; the session then serializes, runs the
// completion handler and posts `taskDidComplete`.
extension SessionTask {
    /// The metrics of every transfer the task ran, in order, once it has completed: one per redirect
    /// followed and per authentication round-trip, then the final one (the same as ``metrics``). Empty
    /// before completion and for a task that never reached the network.
    public var hopMetrics: [TransferMetrics] { machine { $0.hopMetrics } }

    /// Completes the task with `outcome`, exactly once whichever path gets here first.
    func completeTransfer(_ outcome: TaskOutcome) {
        transition({ $0.complete(with: outcome) }) { action in
            switch action {
            case .none: []
            case .hold(let waiters): waiters.isEmpty ? [] : [.notify(waiters)]
            case .finish(let completion): [finishing(completion)]
            }
        }
    }

    /// The effect that hands the completed task to the session: a cancelled task's error is `cancelled`, and
    /// a data task that became a download completes as the download task that continues it, whichever of the
    /// two curl told.
    func finishing(_ completion: TaskMachine.Completion) -> TaskEffect {
        var outcome = completion.outcome
        if completion.wasCancelled, outcome.error?.code != .cancelled {
            outcome.error = Self.cancellation(for: originalRequest.url)
        }
        return .finish(completion.download ?? self, outcome)
    }

    /// Records the final error and runs the completion handler, after `resumeDataAnswer` (a download's answer to
    /// a request for resume data). Completion queue.
    func runCompletionHandler(
        response: HTTPResponse?, object: (any Sendable)?, error: HeraldError?,
        answeringResumeData resumeDataAnswer: (@Sendable () -> Void)? = nil
    ) {
        let (callbacks, upload, download) = transition({ $0.completionReported(error: error) }) {
            action, core -> ((TaskCallbacks, TransferProgress?, TransferProgress?), [TaskEffect]) in
            switch action {
            case .report(let callbacks):
                // Objects made from here on are born finished.
                let upload = self.progress(upload: true, forHandler: callbacks.uploadProgress, in: &core)
                let download = self.progress(upload: false, forHandler: callbacks.downloadProgress, in: &core)
                core.progress.isFinished = true
                core.resourceDeadline?.cancel()
                core.resourceDeadline = nil
                return ((callbacks, upload, download), [])
            }
        }
        upload?.finish(deliveringFinalUpdateTo: callbacks.uploadProgress)
        download?.finish(deliveringFinalUpdateTo: callbacks.downloadProgress)
        // A resume-data handler no download answered (asked of a data task's download as it turned back into the
        // data task) still runs once, with no data, before the completion handler.
        resumeDataAnswer?()
        callbacks.resumeData?(nil)
        callbacks.completion?(response, object, error)
    }
}
