import Foundation
import HeraldEngine

extension DataTask {
    /// Carries out the answer of `dataTaskDidReceiveResponse`. Hook queue.
    func apply(_ disposition: ResponseDisposition, to transfer: Transfer) {
        switch disposition {
        case .allow:
            // Through the task's effects, as `.becomeDownload` is: a `suspend()` in the hook queued a pause the
            // engine must see first, or the body would run until it arrives.
            transition({ _ in () }, effects: { _ in [.engine(.allowResponse(transfer))] })
        case .cancel:
            cancel()
        case .becomeDownload:
            becomeDownload(transfer)
        }
    }

    private func becomeDownload(_ transfer: Transfer) {
        guard canBecomeDownload else {
            return fail(
                transfer,
                HeraldError(
                    .invalidRequest,
                    "dataTaskDidReceiveResponse answered .becomeDownload for a task whose result is its body in "
                        + "memory (data(for:) or upload(for:)); use download(for:) to get a file.",
                    url: originalRequest.url))
        }
        let directory: URL
        do throws(HeraldError) {
            directory = try session.makeDownloadDirectory()
        } catch {
            return fail(transfer, error)
        }
        let temporaryURL = directory.appendingPathComponent(
            "download-\(taskIdentifier)-\(UUID().uuidString).part")
        let download = session.taskClasses.downloadTask.init(
            TaskCreation(
                session: session, identifier: taskIdentifier, request: originalRequest, callbacks: TaskCallbacks(),
                kind: .becomingDownload(self, temporaryURL: temporaryURL), bodyHandling: .serialized))
        // Listed first, then marked in the task: a task that completes in between (a cancel) finds its
        // listing by identifier either way, and one already gone is never listed again.
        let isListed = session.replace(self, with: download)
        let isLive =
            isListed
            && transition({ $0.becomeDownload(download, runningTransfer: transfer) }) {
                action, _ -> (Bool, [TaskEffect]) in
                switch action {
                case .none:
                    return (false, [])
                case .become:
                    // The progress objects keep controlling the data task, which the notifications go on naming:
                    // its class's overrides see their pauses and resumes (the two tasks share one machine).
                    return (true, [])
                }
            }
        guard isLive else {
            // Cancelled while the hook ran: it completes as the data task it was. The folder made for its file
            // may have been made after an invalidation removed the session's: it goes again, if empty.
            if isListed { _ = session.replace(download, with: self) }
            session.removeDownloadDirectoryAfterInvalidation()
            return
        }
        session.dataTaskDidBecomeDownloadTask?(self, download)
        // Through the task's effects, not straight to the engine: a `suspend()` in the hook queued a pause
        // there, which another thread still carrying out the task's effects may not have sent yet. The engine
        // must see the pause first, or the answer would let the body run before it.
        let command = TransferCommand.becomeDownload(
            transfer, sink: .file(temporaryURL, resumeOffset: 0), delegate: download)
        transition({ _ in () }, effects: { _ in [.engine(command)] })
    }

    /// Stops the transfer with `error`, a final failure: the request sent again would meet the same answer.
    private func fail(_ transfer: Transfer, _ error: HeraldError) {
        transition({ $0.stoppingTransferWithOwnError(transfer) })
        session.send(.remove(transfer, error: TransferError(error)))
    }
}
