import Foundation
import HeraldEngine

extension SessionManager {
    // MARK: - uploads

    /// Creates a suspended upload task that sends `data` as the request body; call
    /// ``SessionTask/resume()`` to start it.
    ///
    /// The body replaces `request.body`, with its length as `Content-Length`. The request's method is
    /// used as given (use `"POST"` or `"PUT"`). The response is serialized as for a data task.
    ///
    /// - Parameters:
    ///   - request: The request; validated now (see ``Request``).
    ///   - data: The body.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced, never after the
    ///     completion handler started.
    ///   - completionHandler: Called exactly once on ``completionQueue`` with the response, the
    ///     serializer's output and the error, before `taskDidComplete` is posted.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/sessionInvalidated`` after
    ///   ``invalidate(cancelingTasks:)``, or a validation error for a malformed request.
    public func uploadTask(
        with request: Request, from data: Data,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: TaskCompletionHandler? = nil
    ) throws(HeraldError) -> UploadTask {
        try makeUploadTask(with: request, body: .data(data), progress: progress, completionHandler: completionHandler)
    }

    /// Creates a suspended upload task that streams the file at `fileURL` from disk, in constant memory
    /// whatever its size; call ``SessionTask/resume()`` to start it.
    ///
    /// The file is opened when the task starts and read in chunks as the connection takes them; its size
    /// then is sent as `Content-Length`. A resend (307/308, authentication) rereads it from the start. A file
    /// that grows meanwhile (a log still written to) is sent up to that size, as `curl -T` sends it; one that
    /// shrinks fails the task with ``HeraldError/Code/fileIO``. A multipart form's file part, whose size is part
    /// of the form's length, fails on either.
    ///
    /// - Parameters:
    ///   - request: The request; validated now (see ``Request``). Its `body` is ignored.
    ///   - fileURL: A readable regular file.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced.
    ///   - completionHandler: Called exactly once on ``completionQueue``, before `taskDidComplete`.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when the file can't be read,
    ///   ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``, or a validation
    ///   error for a malformed request. An error opening the file when the task starts fails the task
    ///   with ``HeraldError/Code/fileIO``.
    public func uploadTask(
        with request: Request, fromFile fileURL: URL,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: TaskCompletionHandler? = nil
    ) throws(HeraldError) -> UploadTask {
        try Self.checkUploadFile(fileURL)
        return try makeUploadTask(
            with: request, body: .file(fileURL), progress: progress, completionHandler: completionHandler)
    }

    /// Creates a suspended upload task whose body is pulled from `bodyProvider` as the connection takes
    /// it; call ``SessionTask/resume()`` to start it.
    ///
    /// The body is sent with `Transfer-Encoding: chunked` (over HTTP/1.1), unless `request` has a
    /// `Content-Length` field: then that many bytes are sent with it, for servers that refuse chunked uploads
    /// (as many object stores do). The stream must then hold exactly that many bytes: one that ends sooner, or
    /// has more, fails the task with ``HeraldError/Code/bodyStream`` and the server sees a cut request, never a
    /// body of another length than declared. To see the end, one more read is made with the last bytes, before
    /// they are sent: it must return 0 then, not wait (a pipe whose writer closes only later holds the upload
    /// back until it does). A declared length of 0 sends no body, and the stream is not read.
    ///
    /// The stream is read ahead on a dispatch queue of the upload's own, never the engine's loop thread (see
    /// ``BodyStream``). When the body must be sent
    /// again, ``taskNeedNewBodyStream`` is asked for a fresh stream; without one the task fails with
    /// ``HeraldError/Code/bodyStream``.
    ///
    /// - Parameters:
    ///   - request: The request; validated now (see ``Request``). Its `body` is ignored.
    ///   - bodyProvider: The body.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced; the total is the
    ///     declared `Content-Length`, else unknown (`-1`).
    ///   - completionHandler: Called exactly once on ``completionQueue``, before `taskDidComplete`.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/sessionInvalidated`` after
    ///   ``invalidate(cancelingTasks:)``, ``HeraldError/Code/invalidRequest`` for a `Content-Length` that is
    ///   not one decimal number (or several fields that differ), or a validation error for a malformed
    ///   request.
    public func uploadTask(
        withStreamedRequest request: Request, bodyProvider: BodyStream,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: TaskCompletionHandler? = nil
    ) throws(HeraldError) -> UploadTask {
        let length = try Self.declaredBodyLength(of: request)
        return try makeUploadTask(
            with: request, body: .stream(bodyProvider, length: length), progress: progress,
            completionHandler: completionHandler)
    }

    /// The length the caller's `Content-Length` declares for a streamed body, or `nil` without the field.
    /// - Throws: ``HeraldError/Code/invalidRequest`` for a value that is not a decimal number of bytes, or
    ///   fields that disagree.
    static func declaredBodyLength(of request: Request) throws(HeraldError) -> Int64? {
        let values = request.headers.values(for: "Content-Length")
        guard let first = values.first else { return nil }
        guard let length = ResponseHead.contentLength(from: first.trimmingCharacters(in: .whitespaces)),
            values.allSatisfy({ $0.trimmingCharacters(in: .whitespaces) == first.trimmingCharacters(in: .whitespaces) })
        else {
            throw HeraldError(
                .invalidRequest,
                "The request's Content-Length (\(values.joined(separator: ", "))) is not one decimal number of bytes.",
                url: request.url)
        }
        return length
    }

    /// Makes an upload task of the class ``taskClasses`` names, for every upload factory.
    func makeUploadTask(
        with request: Request, body: UploadTask.Body,
        progress: (@Sendable (TransferProgress) -> Void)?,
        completionHandler: TaskCompletionHandler?, bodyHandling: ResponseBodyHandling = .serialized,
        answersAwaitingCaller: Bool = false
    ) throws(HeraldError) -> UploadTask {
        try request.validate(allowedProtocols: configuration.allowedProtocols)
        guard request.method != "HEAD" else { throw SessionTask.headUpload(url: request.url) }
        var callbacks = TaskCallbacks(completion: completionHandler, uploadProgress: progress)
        callbacks.answersAwaitingCaller = answersAwaitingCaller
        return try makeTask(
            taskClasses.uploadTask.init, request: request, callbacks: callbacks, bodyHandling: bodyHandling
        ) { _ in .upload(body) }
    }

    // MARK: - downloads

    /// Creates a suspended download task that writes the response body to a temporary file as it
    /// arrives, then moves it to the URL `destination` returns; call ``SessionTask/resume()`` to start it.
    ///
    /// See ``DownloadTask`` for where the bytes are at each step and when the temporary file is deleted.
    ///
    /// - Parameters:
    ///   - request: The request; validated now (see ``Request``).
    ///   - progress: Called with the download progress on ``completionQueue``, coalesced, never after the
    ///     completion handler started. For a resumed download the counts include the bytes already in
    ///     the partial file.
    ///   - destination: Called once after the whole body is on disk, with the temporary file and the
    ///     response, before the completion handler: on ``completionQueue`` when it is the session's own (the
    ///     default), on a serial queue of the task's completion (`herald.hooks`) when you passed a completion
    ///     queue; never on the loop thread.
    ///     It must not block: on the session's queue, other tasks' completions wait behind it. Returns where
    ///     the file should go. `nil` (or returning the temporary URL) leaves the file where it is, and it
    ///     is then yours to move or delete. The move follows ``SessionConfiguration/downloadMoveOptions``.
    ///   - completionHandler: Called exactly once on ``completionQueue`` — see
    ///     ``DownloadCompletionHandler`` — before `taskDidComplete` is posted.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when the session's temporary directory
    ///   can't be created, ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``,
    ///   or a validation error for a malformed request.
    public func downloadTask(
        with request: Request,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        destination: (@Sendable (_ temporaryURL: URL, _ response: HTTPResponse) -> URL)? = nil,
        completionHandler: (@Sendable (_ response: HTTPResponse?, _ fileURL: URL?, _ error: HeraldError?) -> Void)? =
            nil
    ) throws(HeraldError) -> DownloadTask {
        try request.validate(allowedProtocols: configuration.allowedProtocols)
        // A refused task creates nothing on disk: refuse before making the directory.
        guard !isInvalidated else { throw Self.refusal }
        let directory = try makeDownloadDirectory()
        do {
            return try makeDownloadTask(
                with: request, progress: progress, completionHandler: completionHandler
            ) { identifier in
                let temporaryURL = directory.appendingPathComponent("download-\(identifier)-\(UUID().uuidString).part")
                return .download(temporaryURL: temporaryURL, resumedFrom: nil, destination: destination)
            }
        } catch {
            // Invalidated meanwhile: the directory may have been made after invalidation removed it.
            removeDownloadDirectoryAfterInvalidation()
            throw error
        }
    }

    /// Creates a suspended download task that continues a cancelled one from its resume data; call
    /// ``SessionTask/resume()`` to start it.
    ///
    /// The request asks for the rest with `Range: bytes=N-` and `If-Range` (the ETag or Last-Modified the
    /// first response carried). A `206` appends to the partial file; a `200` — the server ignored the
    /// range, or the resource changed — restarts the file from zero, so the result is never a splice of
    /// two versions. Any other status fails the task with ``HeraldError/Code/cannotResume``.
    ///
    /// - Parameters:
    ///   - resumeData: Data from ``DownloadTask/cancel(byProducingResumeData:)``.
    ///   - progress: As for ``downloadTask(with:progress:destination:completionHandler:)``.
    ///   - destination: As for ``downloadTask(with:progress:destination:completionHandler:)``.
    ///   - completionHandler: As for ``downloadTask(with:progress:destination:completionHandler:)``.
    /// - Returns: The task, suspended; it writes to the partial file the resume data names.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/cannotResume`` when the data is corrupt, of
    ///   another format or version, or its partial file is gone or too short, or while another task made from
    ///   it (by any session of the process) or this session's task it came from continues the same partial
    ///   file; ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``.
    public func downloadTask(
        withResumeData resumeData: Data,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        destination: (@Sendable (_ temporaryURL: URL, _ response: HTTPResponse) -> URL)? = nil,
        completionHandler: (@Sendable (_ response: HTTPResponse?, _ fileURL: URL?, _ error: HeraldError?) -> Void)? =
            nil
    ) throws(HeraldError) -> DownloadTask {
        let resume = try DownloadResumeData.decode(resumeData)
        let partialPath = resume.partialFileURL.standardizedFileURL.path
        // Two tasks on one partial file would write over each other's bytes, and either one's cancel would
        // delete the file the other writes. The file is claimed process-wide, so two threads or two sessions
        // making tasks from the same resume data at once can't both pass; a live task of this session whose own
        // file it is (the one the resume data came from) holds it too.
        let claimed = Self.claimedPartialFiles.withLock { $0.insert(partialPath).inserted }
        let holder = downloadTasks.first {
            $0.state != .completed && $0.temporaryURL.standardizedFileURL.path == partialPath
        }
        guard claimed, holder == nil else {
            if claimed { releasePartialFile(partialPath) }
            let who = holder.map { "Task \($0.taskIdentifier) of this session" } ?? "Another task"
            throw HeraldError(
                .cannotResume,
                "\(who) already continues this resume data's partial file; a second task would write the same file.",
                url: resume.url)
        }
        do {
            var headers = HTTPHeaders()
            for pair in resume.headers { headers.add(name: pair[0], value: pair[1]) }
            let request = Request(url: resume.url, headers: headers)
            try request.validate(allowedProtocols: configuration.allowedProtocols)
            return try makeDownloadTask(with: request, progress: progress, completionHandler: completionHandler) { _ in
                .download(temporaryURL: resume.partialFileURL, resumedFrom: resume, destination: destination)
            }
        } catch {
            releasePartialFile(partialPath)
            throw error
        }
    }

    /// Deletes the partial file `resumeData` names: resume data you won't continue (a download given up, or
    /// one `download(for:to:)` failed with and you don't retry), whose file would otherwise stay in the
    /// session's folder.
    ///
    /// The data is checked as ``downloadTask(withResumeData:progress:destination:completionHandler:)`` checks
    /// it (Herald's own resume data, naming by an absolute path without `..` a regular `download-….part` file,
    /// not itself a symbolic link), so that only such a file can be deleted through it. Keep resume data where you
    /// keep other private data: the path's folders are followed as they are.
    /// - Parameter resumeData: Data from ``DownloadTask/cancel(byProducingResumeData:)`` or a failed task's
    ///   ``HeraldError/resumeData``.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/cannotResume`` when the data is not resume data Herald
    ///   made, its file is already gone (a task made from it completed), or a task (of any session) continues
    ///   that file; ``HeraldError/Code/fileIO`` when it can't be deleted.
    public func discardResumeData(_ resumeData: Data) throws(HeraldError) {
        let resume = try DownloadResumeData.decode(resumeData)
        let partialPath = resume.partialFileURL.standardizedFileURL.path
        // Claimed while it is deleted, so no task can start on it meanwhile.
        let claimed = Self.claimedPartialFiles.withLock { $0.insert(partialPath).inserted }
        defer { if claimed { releasePartialFile(partialPath) } }
        let holder = downloadTasks.first {
            $0.state != .completed && $0.temporaryURL.standardizedFileURL.path == partialPath
        }
        guard claimed, holder == nil else {
            throw HeraldError(
                .cannotResume, "A task continues this resume data's partial file: cancel it instead.",
                url: resume.url)
        }
        guard unlink(partialPath) == 0 || errno == ENOENT else {
            throw HeraldError.fileFailure("Cannot delete the resume data's partial file", url: resume.partialFileURL)
        }
    }

    /// Lets go of a partial file ``downloadTask(withResumeData:progress:destination:completionHandler:)`` claimed
    /// for a task: the task failed to be made, or has completed.
    func releasePartialFile(_ path: String) {
        _ = Self.claimedPartialFiles.withLock { $0.remove(path) }
    }

    /// Makes a download task of the class ``taskClasses`` names, for every download factory.
    private func makeDownloadTask(
        with request: Request, progress: (@Sendable (TransferProgress) -> Void)?,
        completionHandler: DownloadCompletionHandler?, kind: (_ identifier: Int) -> TaskCreation.Kind
    ) throws(HeraldError) -> DownloadTask {
        try makeTask(
            taskClasses.downloadTask.init, request: request,
            callbacks: TaskCallbacks(
                completion: DownloadTask.taskCompletionHandler(completionHandler), downloadProgress: progress),
            kind: kind)
    }

    /// The session's private folder for temporary files, made if it is not there (see
    /// ``SessionConfiguration/temporaryDirectory``).
    func makeDownloadDirectory() throws(HeraldError) -> URL {
        try downloadDirectory.url()
    }
}

extension SessionManager {
    /// Checks that `fileURL` names a readable regular file, for an upload from it.
    /// - Throws: ``HeraldError/Code/fileIO`` when it is not a file URL (a path given to `URL(string:)`), can't be
    ///   found or read, or is not a regular file.
    static func checkUploadFile(_ fileURL: URL) throws(HeraldError) {
        guard fileURL.isFileURL else {
            throw HeraldError(
                .fileIO,
                "The upload file \(fileURL.absoluteString) is not a file URL; make it with URL(fileURLWithPath:).",
                url: fileURL)
        }
        var status = stat()
        guard stat(fileURL.path, &status) == 0 else {
            throw HeraldError.fileFailure("Cannot read the upload file", url: fileURL)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG, access(fileURL.path, R_OK) == 0 else {
            throw HeraldError(.fileIO, "The upload file \(fileURL.path) is not a readable regular file.")
        }
    }
}
