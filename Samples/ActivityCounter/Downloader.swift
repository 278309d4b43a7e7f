import Foundation
import Herald
import Synchronization

/// Downloads one URL, with its retries, into `--output-dir` or nowhere.
struct Downloader: Sendable {
    let session: SessionManager
    let output: OutputDirectory?
    /// Set with `--continue`.
    let resumeStore: ResumeStore?
    /// Set with `--continue`: which URL each saved file came from.
    let savedFiles: SavedFileIndex?
    let retrySchedule: RetrySchedule
    let maximumSize: Int64?
    let display: ActivityDisplay
    let console: Console

    /// Downloads `target`, trying again after transient failures; returns when it is saved, has failed for
    /// good, or was interrupted (Swift task cancellation: SIGHUP, SIGINT or SIGTERM).
    func fetch(_ target: FetchTarget, index: Int) async -> FetchResult {
        let clock = ContinuousClock()
        let start = clock.now
        var result = FetchResult(target: target)
        var resumeData = resumeStore?.load(for: target.url)
        if resumeStore != nil, resumeData == nil, let existing = savedFiles?.existingFile(for: target.url) {
            // --continue with the file an earlier run saved from this URL still there and nothing left to
            // resume: complete, not fetched again.
            result.file = .alreadyThere(existing.path)
            output?.reserve(existing.lastPathComponent)
            let size = try? FileManager.default.attributesOfItem(atPath: existing.path)[.size] as? NSNumber
            result.bytes = size?.int64Value ?? 0
            return result
        }
        while true {
            let attempt = await attemptOnce(target.url, index: index, resumeData: resumeData)
            display.attemptEnded(index)
            resumeData = attempt.resumeData
            result.status = attempt.response?.statusCode
            result.bytes = attempt.bytes
            result.failure = attempt.failure
            result.file = attempt.file
            guard let failure = attempt.failure, failure != .interrupted,
                let delay = retrySchedule.delay(
                    beforeRetry: result.attempts, after: failure, response: attempt.response)
            else { break }
            console.note(
                "retrying \(console.redacted(target.url)) in \(String(format: "%.1f", delay)) s "
                    + "(\(failure.message); retry \(result.attempts) of \(retrySchedule.retries))")
            do {
                try await Task.sleep(for: .seconds(delay))
            } catch {
                result.failure = .interrupted
                break
            }
            result.attempts += 1
        }
        if let resumeData, result.failure != nil {
            // The bytes so far: kept for --continue, otherwise removed (Herald keeps them for the resume data).
            if let resumeStore, let path = resumeStore.keep(resumeData, for: target.url) {
                result.file = .partial(path)
            } else {
                Self.removePartialFile(of: resumeData)
            }
        } else if result.failure == nil {
            resumeStore?.discard(for: target.url)
        }
        if let savedFiles, case .saved(let path) = result.file {
            do {
                try savedFiles.record(URL(fileURLWithPath: path), for: target.url)
            } catch {
                console.warn(
                    "\(SavedFileIndex.fileName) could not be written (\(error.localizedDescription)): the next "
                        + "--continue run fetches \(console.redacted(target.url)) again.")
            }
        }
        let elapsed = start.duration(to: clock.now)
        result.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return result
    }

    /// What one request ended with.
    struct Attempt: Sendable {
        var response: HTTPResponse?
        var failure: FetchFailure?
        var file: FetchResult.File?
        var bytes: Int64 = 0
        /// Resume data for the next attempt or run, when the bytes so far can be continued.
        var resumeData: Data?
    }

    /// What the cancellation handler and the callbacks share about one request.
    final class AttemptState: Sendable {
        struct Fields {
            var task: DownloadTask?
            var bytes: Int64 = 0
            var tooLarge = false
            var resumeDataFromCancel: Data?
            /// The bytes the partial file held when the request resumed it: not this request's to show.
            var resumedFrom: Int64 = 0
        }
        let fields = Mutex(Fields())
    }

    private func attemptOnce(_ url: URL, index: Int, resumeData: Data?) async -> Attempt {
        let state = AttemptState()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Attempt, Never>) in
                let task: DownloadTask
                do throws(HeraldError) {
                    task = try makeTask(url, index: index, resumeData: resumeData, state: state) { attempt in
                        continuation.resume(returning: attempt)
                    }
                } catch {
                    continuation.resume(returning: Attempt(failure: FetchFailure(error)))
                    return
                }
                state.fields.withLock { $0.task = task }
                task.resume()
                if Task.isCancelled { interrupt(state) }
            }
        } onCancel: {
            interrupt(state)
        }
    }

    /// Cancels the running request: with `--continue`, asking Herald for resume data so the bytes are kept.
    private func interrupt(_ state: AttemptState) {
        guard let task = state.fields.withLock({ $0.task }) else { return }
        guard resumeStore != nil else { return task.cancel() }
        // The resume data handler runs before the task's completion handler, which reads it.
        task.cancel(byProducingResumeData: { data in
            guard let data else { return }
            state.fields.withLock { $0.resumeDataFromCancel = data }
        })
    }
}
