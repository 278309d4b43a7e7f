import Foundation
import Herald

extension Downloader {
    /// Creates the download task for one request: from resume data when there is some (falling back to a fresh
    /// request when Herald refuses it), with the size cap and the safe destination wired in.
    func makeTask(
        _ url: URL, index: Int, resumeData: Data?, state: AttemptState,
        completion: @escaping @Sendable (Attempt) -> Void
    ) throws(HeraldError) -> DownloadTask {
        let maximumSize = self.maximumSize
        let display = self.display
        let progress: @Sendable (TransferProgress) -> Void = { progress in
            let received = progress.completedUnitCount
            let resumedFrom = state.fields.withLock { fields -> Int64 in
                // Fewer bytes than resumed from: the server sent the whole body again and the file restarted.
                if received < fields.resumedFrom { fields.resumedFrom = 0 }
                return fields.resumedFrom
            }
            display.progress(index, bytes: received, total: progress.totalUnitCount, resumedFrom: resumedFrom)
            let tooLarge = maximumSize.map { received > $0 || progress.totalUnitCount > $0 } ?? false
            let task = state.fields.withLock { fields -> DownloadTask? in
                fields.bytes = max(fields.bytes, received)
                guard tooLarge, !fields.tooLarge else { return nil }
                fields.tooLarge = true
                return fields.task
            }
            // Herald does not cap download tasks (they stream to disk): the first progress report past the cap,
            // or a declared length over it, ends the transfer, and cancelling deletes what was written.
            task?.cancel()
        }
        let output = self.output
        let destination: @Sendable (URL, HTTPResponse) -> URL = { temporaryURL, response in
            // Only successful bodies are saved; an error page stays in the temporary file and is removed.
            guard let output, Self.isSuccess(response, file: temporaryURL) else { return temporaryURL }
            // Over the cap (a body that ended before a progress report could stop it) it is not kept either: it
            // must not claim a name, which with --overwrite would replace a file already there before the
            // completion removes it.
            if let maximumSize, state.fields.withLock({ $0.tooLarge }) || Self.size(of: temporaryURL) > maximumSize {
                return temporaryURL
            }
            return output.claim(for: response)
        }
        let handler: @Sendable (HTTPResponse?, URL?, HeraldError?) -> Void = { response, fileURL, error in
            completion(
                Self.attempt(
                    response: response, fileURL: fileURL, error: error, output: output, maximumSize: maximumSize,
                    state: state))
        }
        if let resumeData {
            do {
                let task = try session.downloadTask(
                    withResumeData: resumeData, progress: progress, destination: destination,
                    completionHandler: handler)
                // Set before the task is resumed, so before its first progress report.
                let offset = Self.bytesReceived(in: resumeData)
                state.fields.withLock { $0.resumedFrom = offset }
                return task
            } catch  where error.code == .cannotResume {
                // Stale or foreign resume data: start again from zero rather than fail.
                resumeStore?.discard(for: url)
            }
        }
        return try session.downloadTask(
            with: Request(url: url), progress: progress, destination: destination, completionHandler: handler)
    }

    /// Reads the outcome of one request off Herald's completion, removing any file that is not the user's.
    private static func attempt(
        response: HTTPResponse?, fileURL: URL?, error: HeraldError?, output: OutputDirectory?, maximumSize: Int64?,
        state: AttemptState
    ) -> Attempt {
        let fields = state.fields.withLock { $0 }
        var attempt = Attempt(response: response, bytes: fields.bytes)
        if let fileURL {
            let size = try? FileManager.default.attributesOfItem(atPath: fileURL.path)[.size] as? NSNumber
            attempt.bytes = size?.int64Value ?? fields.bytes
        }
        if let error {
            attempt.failure = fields.tooLarge ? .tooLarge(limit: maximumSize ?? 0) : FetchFailure(error)
            if error.code == .cancelled, !fields.tooLarge {
                attempt.failure = .interrupted
                attempt.resumeData = fields.resumeDataFromCancel
            } else {
                attempt.resumeData = fields.task?.resumeDataAfterFailure
            }
            if error.code == .downloadMoveFailed, let fileURL, FileManager.default.fileExists(atPath: fileURL.path) {
                // Herald kept the downloaded file where it was written: say where, never delete it. (Not when
                // that place is gone too: the temporary folder is inside --output-dir.)
                attempt.file = .keptAfterFailedMove(fileURL.path)
            }
            return attempt
        }
        guard let response, let fileURL else { return attempt }
        if let maximumSize, attempt.bytes > maximumSize {
            // Finished before a progress report could stop it: over the cap all the same, so not kept.
            try? FileManager.default.removeItem(at: fileURL)
            attempt.failure = .tooLarge(limit: maximumSize)
            return attempt
        }
        let saved =
            output.map { fileURL.deletingLastPathComponent().standardizedFileURL == $0.url.standardizedFileURL }
            ?? false
        if saved, let output {
            output.applyFileMode(to: fileURL)
            attempt.file = .saved(fileURL.path)
        } else {
            try? FileManager.default.removeItem(at: fileURL)
        }
        if !isSuccess(response, file: fileURL) { attempt.failure = .http(status: response.statusCode) }
        return attempt
    }

    /// Whether the download ended with the whole file: a `2xx`, or the `416` with which a server says a
    /// continued file already holds every byte (`Content-Range: bytes */N`, N being the file's size). Herald
    /// completes such a download with the file as it is and that `416` as its response.
    static func isSuccess(_ response: HTTPResponse, file: URL) -> Bool {
        if (200..<300).contains(response.statusCode) { return true }
        guard response.statusCode == 416, let range = response.headers["Content-Range"],
            range.hasPrefix("bytes */"), let length = Int64(range.dropFirst("bytes */".count)), length > 0,
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber
        else { return false }
        return size.int64Value == length
    }

    /// The size of the file at `url`; 0 when it can't be read.
    static func size(of url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The bytes Herald's resume data says the partial file holds (its documented `bytesReceived` field).
    static func bytesReceived(in resumeData: Data) -> Int64 {
        guard let object = try? JSONSerialization.jsonObject(with: resumeData) as? [String: Any],
            let bytes = (object["bytesReceived"] as? NSNumber)?.int64Value
        else { return 0 }
        return max(0, bytes)
    }

    /// Removes the partial file named by Herald's resume data (its documented `partialFilePath` field).
    static func removePartialFile(of resumeData: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: resumeData) as? [String: Any],
            let path = object["partialFilePath"] as? String
        else { return }
        try? FileManager.default.removeItem(atPath: path)
    }
}
