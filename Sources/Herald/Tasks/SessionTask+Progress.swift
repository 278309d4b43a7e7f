// A task's progress objects: made on first use, since most tasks never ask for them, and each holds its
// task until the task completes (see `TransferProgress`).

/// A task's two progress objects, once made, and the counts a newly made one starts from. Part of the
/// task's locked state, which a data task that became a download shares with the download task that
/// continues it.
struct ProgressSlots {
    /// The counts of one direction, as the transfer reports them: kept by the task for objects not yet made,
    /// and by each ``TransferProgress``.
    struct Counts {
        var completed: Int64 = 0
        /// -1 while unknown; a known total is kept when a later report of the same body doesn't repeat it.
        var total: Int64 = -1

        mutating func record(completed: Int64, total: Int64?) {
            self.completed = completed
            if let total, total >= 0 { self.total = total }
        }

        /// A new response body begins (a retry's, a redirect's target's): nothing of it has arrived, and its
        /// total, or none, replaces the earlier body's, which says nothing of it.
        mutating func restart(total: Int64?) {
            completed = 0
            self.total = total.map { max($0, -1) } ?? -1
        }
    }

    var upload: TransferProgress?
    var download: TransferProgress?
    var uploadCounts = Counts()
    var downloadCounts = Counts()
    /// Whether the completion has finished the objects made so far: those made later are born finished.
    var isFinished = false
    /// A download's file size at the last `downloadTaskDidWriteData`, for its deltas.
    var lastTotalWritten: Int64 = 0
}

extension SessionTask {
    /// A progress handler, as the task factories take it.
    typealias ProgressHandler = @Sendable (TransferProgress) -> Void

    /// Progress of the request body; controls the task (see ``TransferProgress``).
    ///
    /// Made when first asked for, with the counts so far; the same object from then on, asked of a data task
    /// that became a download or of the download task that continues it. Asked for after the task completed,
    /// it holds the final counts and controls nothing.
    public var uploadProgress: TransferProgress { core.withLock { progress(upload: true, in: &$0) } }

    /// Progress of the response body; controls the task (see ``TransferProgress``).
    ///
    /// Made when first asked for, like ``uploadProgress``.
    public var downloadProgress: TransferProgress { core.withLock { progress(upload: false, in: &$0) } }

    /// The progress object of one direction, made now if it doesn't exist yet: with the counts so far, bound
    /// to the task the notifications name (the data task, when it became a download), or finished when the
    /// completion has finished the others. Under the task's lock.
    func progress(upload: Bool, in core: inout Core) -> TransferProgress {
        if let made = upload ? core.progress.upload : core.progress.download { return made }
        let counts = upload ? core.progress.uploadCounts : core.progress.downloadCounts
        let isFinished = core.progress.isFinished
        let made = TransferProgress(
            completed: counts.completed, total: counts.total,
            task: isFinished ? nil : lifecycleSubject, isFinished: isFinished)
        if upload { core.progress.upload = made } else { core.progress.download = made }
        return made
    }

    /// The object of one direction that new counts must reach: made now when a handler needs it (the object
    /// coalesces the handler's calls and gives it its final one), otherwise only one already made. Under
    /// the task's lock.
    func progress(upload: Bool, forHandler handler: ProgressHandler?, in core: inout Core) -> TransferProgress? {
        guard handler != nil else { return upload ? core.progress.upload : core.progress.download }
        return progress(upload: upload, in: &core)
    }

    /// Finishes the progress objects made so far, without a final handler call, for a task that will never
    /// complete (one its factory refused): they let it go.
    func abandonProgress() {
        let (upload, download) = core.withLock { core in
            core.progress.isFinished = true
            return (core.progress.upload, core.progress.download)
        }
        upload?.finish(deliveringFinalUpdateTo: nil)
        download?.finish(deliveringFinalUpdateTo: nil)
    }
}
