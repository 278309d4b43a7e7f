import Foundation

// Completing a task: the machine decides whether the outcome completes the task (exactly once), waits for
// `resume()` (the task is suspended), or arrives too late; the session then serializes, runs the
// completion handler and posts `taskDidComplete`.
extension SessionTask {
    /// The metrics of every transfer the task ran, in order, once it has completed: one per redirect
    /// followed and per authentication round-trip, then the final one (the same as ``metrics``). Empty
    /// before completion and for a task that never reached the network.
    public var hopMetrics: [TransferMetrics] {
        core.withLock { core in
            guard core.machine.state == .completed else { return [] }
            guard core.metricsEndHops, let last = core.metrics else { return core.machine.hops.metrics }
            return core.machine.hops.metrics + [last]
        }
    }

    /// Completes the task with `outcome`, exactly once whichever path gets here first.
    func completeTransfer(_ outcome: TransferOutcome) {
        transition { core -> ((), [TaskEffect]) in
            let wasCancelled: Bool
            let downloadTask: DownloadTask?
            switch core.machine.complete(with: outcome) {
            case .none:
                return ((), [])
            case .hold:
                defer { core.holdWaiters = [] }
                return ((), core.holdWaiters.isEmpty ? [] : [.notify(core.holdWaiters)])
            case .finish(let cancelled, let download):
                (wasCancelled, downloadTask) = (cancelled, download)
            }
            var outcome = outcome
            if let stale = core.revalidating, outcome.error == nil, let notModified = outcome.response,
                notModified.statusCode == 304
            {
                // The server confirmed the cached response: complete with it, refreshed by the 304's fields.
                outcome.response = ResponseCachePolicy.refreshed(stale.response, with: notModified)
                outcome.body = stale.data
            }
            core.revalidating = nil
            if var metrics = outcome.metrics {
                // curl follows no redirect itself: the count is Herald's.
                metrics.redirectCount = core.machine.hops.redirectCount
                outcome.metrics = metrics
                // It ends `hopMetrics`, kept apart from the earlier hops': most tasks have none, and so no
                // list to allocate.
                core.metricsEndHops = true
            } else if outcome.response != nil, let last = core.machine.hops.metrics.last {
                outcome.metrics = last
            }
            core.metrics = outcome.metrics
            if let response = outcome.response { core.response = response }
            if wasCancelled, outcome.error?.code != .cancelled {
                outcome.error = Self.cancellation(for: originalRequest.url)
            }
            // A data task that became a download completes as the download task that continues it, whichever of
            // the two curl told.
            return ((), [.finish(downloadTask ?? self, outcome)])
        }
    }

    /// Records the final error and runs the completion handler. Completion queue.
    func runCompletionHandler(response: HTTPResponse?, object: (any Sendable)?, error: HeraldError?) {
        let (handler, uploadHandler, downloadHandler, upload, download) = core.withLock { core in
            core.error = error
            let handlers = (core.completionHandler, core.uploadProgressHandler, core.downloadProgressHandler)
            core.completionHandler = nil
            core.uploadProgressHandler = nil
            core.downloadProgressHandler = nil
            // Objects made from here on are born finished.
            let upload = self.progress(upload: true, forHandler: handlers.1, in: &core)
            let download = self.progress(upload: false, forHandler: handlers.2, in: &core)
            core.progress.isFinished = true
            return (handlers.0, handlers.1, handlers.2, upload, download)
        }
        upload?.finish(deliveringFinalUpdateTo: uploadHandler)
        download?.finish(deliveringFinalUpdateTo: downloadHandler)
        handler?(response, object, error)
    }
}
