import Foundation
import HeraldNotifications
import HeraldEngine

/// The completion handler of a download task: the response, where the file is, and the error.
///
/// Runs exactly once, on the session's ``SessionManager/completionQueue`` (inside its
/// ``SessionManager/completionGroup`` when one is set), before `taskDidComplete` is posted. On success
/// `fileURL` is where the file ended up: the URL `destination` returned, or the temporary file when there
/// was no destination. When the move failed, `error` has code ``HeraldError/Code/downloadMoveFailed`` and
/// `fileURL` is the **kept** temporary file. On any other error `fileURL` is `nil`.
public typealias DownloadCompletionHandler =
    @Sendable (
        _ response: HTTPResponse?, _ fileURL: URL?, _ error: HeraldError?
    ) -> Void

/// Chooses where a finished download goes: called with the temporary file and the response.
public typealias DownloadDestination = @Sendable (_ temporaryURL: URL, _ response: HTTPResponse) -> URL

/// A task that writes the response body to a file as it arrives, then moves it where `destination` says:
/// AF's download task. Memory stays constant whatever the size.
///
/// Create one with ``SessionManager/downloadTask(with:progress:destination:completionHandler:)`` or
/// ``SessionManager/downloadTask(withResumeData:progress:destination:completionHandler:)``.
///
/// **Where the bytes are, and when they are deleted.** The body is written to a temporary file in a
/// directory of the session's own under ``SessionConfiguration/temporaryDirectory`` when it is set, else
/// under the system's temporary directory (`TMPDIR`, else `/tmp`). After a complete transfer (whatever the
/// HTTP status — validating it is yours), `destination` is called and the file is moved there with the
/// session's ``SessionConfiguration/downloadMoveOptions``. The temporary file is deleted only when (1) it
/// was moved, (2) the task was cancelled without asking for resume data (or resume data could not be made),
/// or (3) the transfer failed and cannot be resumed (not a `GET`, or the response had no validator to send as
/// `If-Range`: neither a strong `ETag` nor, without any `ETag`, a `Last-Modified` a second or more before its
/// `Date`). A failed transfer that can be resumed (connection lost, timeout) keeps
/// its partial file and offers ``resumeDataAfterFailure`` — also in the error's ``HeraldError/resumeData``,
/// as URLSession's resume data in a failure's `userInfo`. A retry (see ``SessionTask/interceptor``)
/// continues the partial file the same way, with `Range` and `If-Range`. If the move fails, the file is
/// kept, `downloadDidFailToMoveFile` is posted, and the completion reports it. With
/// ``cancel(byProducingResumeData:)`` the partial file is kept for the resume data. To have the session hand
/// out a subclass, see ``TaskClasses``.
open class DownloadTask: SessionTask, @unchecked Sendable {
    // Safety: adds only immutable, Sendable members to SessionTask; its mutable state is the task's, in `core`.

    /// Resume data for a download that failed part-way (connection lost, timeout, server reset), set
    /// before the completion handler runs; `nil` for other outcomes or when the download can't be resumed.
    /// Pass it to ``SessionManager/downloadTask(withResumeData:progress:destination:completionHandler:)``
    /// to continue; until then the partial file it names is kept.
    public var resumeDataAfterFailure: Data? { machine { $0.report.resumeDataAfterFailure } }

    /// Where the body is written while it arrives (for a resumed task, the partial file).
    public let temporaryURL: URL
    let destination: DownloadDestination?
    let resumedFrom: DownloadResumeData?
    /// The body of the upload task this download became, if it became one: its retries send it again (the
    /// request's own body field is not where an upload's body is).
    let uploadBody: UploadTask.Body?

    override var sendsUploadBody: Bool { uploadBody != nil }

    override var sendsStreamedBody: Bool { uploadBody?.isStream == true }

    /// Creates the task a session prepared. The session calls it on the class ``SessionManager/taskClasses``
    /// names — also for the download task a data task becomes; a subclass that declares initializers of its
    /// own implements it and calls `super.init(creation)`.
    /// - Parameter creation: What the session prepared; pass it on unchanged.
    public required init(_ creation: TaskCreation) {
        switch creation.kind {
        case .becomingDownload(let dataTask, let temporaryURL):
            self.temporaryURL = temporaryURL
            self.destination = nil
            self.resumedFrom = nil
            self.uploadBody = (dataTask as? UploadTask)?.body
            super.init(continuing: dataTask)
        case .download(let temporaryURL, let resumedFrom, let destination):
            self.temporaryURL = temporaryURL
            self.destination = destination
            self.resumedFrom = resumedFrom
            self.uploadBody = nil
            super.init(creation: creation)
            core.withLock { $0.downloadContinuation = resumedFrom }
        case .data, .upload:
            // Only a download factory makes a download task; anything else downloads the request to a new
            // temporary file. Where the private folder can't be made, a path in a folder that does not exist
            // (random, so no one can make it first): opening the file fails the task.
            let directory =
                (try? creation.session.makeDownloadDirectory())
                ?? URL(fileURLWithPath: "/nonexistent-herald-\(UUID().uuidString)", isDirectory: true)
            self.temporaryURL = directory.appendingPathComponent(
                "download-\(creation.identifier)-\(UUID().uuidString).part")
            self.destination = nil
            self.resumedFrom = nil
            self.uploadBody = nil
            super.init(creation: creation)
        }
    }

    /// A download completion handler in the form every task's completion takes: the file URL is the
    /// response object.
    static func taskCompletionHandler(_ handler: DownloadCompletionHandler?) -> TaskCompletionHandler? {
        guard let handler else { return nil }
        return { response, object, error in handler(response, object as? URL, error) }
    }

    /// Cancels the task and produces resume data for continuing it later with
    /// ``SessionManager/downloadTask(withResumeData:progress:destination:completionHandler:)``.
    ///
    /// `completionHandler` runs exactly once on the session's ``SessionManager/completionQueue``, before the
    /// task's own completion handler (which reports ``HeraldError/Code/cancelled``, carrying the same data as
    /// ``HeraldError/resumeData``). It gets `nil` — and the partial file is deleted — when the download cannot
    /// be continued: the request is not a `GET` or carries a `Range` of its own, the response has no validator to
    /// send as `If-Range` (neither a strong `ETag` nor, without any `ETag`, a `Last-Modified` a second or more
    /// before its `Date`), no byte of its body reached the file yet, or the file holds a body
    /// decoded from its `Content-Encoding` (a data task that became a download). It gets `nil` too when the task
    /// had already completed, whose file is left as its completion left it. Otherwise the partial file is kept
    /// where the resume data says, until a task resumed from it completes. A second call
    /// while the first waits for its data gets `nil` at once; the first gets the data.
    ///
    /// - Parameter completionHandler: Receives the resume data (format: see `DownloadResumeData`) or `nil`.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        // The machine takes a handler only while the task has not completed, and every handler taken is
        // answered where the completion is (`completionResult`).
        switch transition({ $0.resumeDataRequested(completionHandler) }) {
        case .cancel:
            cancel()
        case .answerNil:
            session.runOnCompletionQueue { completionHandler(nil) }
        }
    }

    // MARK: - hooks (engine loop thread)

    /// Where the file's body starts, as the sink decided: the partial file's length for a `206` continuing it
    /// (or a `416` saying it is whole), 0 for a body that restarts it. A redirect or a challenge on the way,
    /// and an answer the sink refused, start no body and are not reported.
    override func didBeginBody(at offset: Int64, expected: Int64?) {
        let continuation = core.withLock { core -> DownloadResumeData? in
            core.progress.lastTotalWritten = offset
            return core.downloadContinuation
        }
        // A continued file's progress starts at its length: a `416` saying it is whole brings no byte after it.
        if offset > 0 { super.transferDidReceiveBytes(total: offset, expected: expected) }
        guard continuation != nil, let hook = session.downloadTaskDidResume else { return }
        session.runOnCompletionQueue { hook(self, offset, expected) }
    }

    package override func transferDidReceiveBytes(total received: Int64, expected: Int64?) {
        super.transferDidReceiveBytes(total: received, expected: expected)
        guard let hook = session.downloadTaskDidWriteData else { return }
        let written = core.withLock { core -> Int64 in
            defer { core.progress.lastTotalWritten = received }
            return received - core.progress.lastTotalWritten
        }
        session.runOnCompletionQueue { hook(self, written, received, expected) }
    }

    // MARK: - task kind

    override func makeTransferRequest(for request: Request) -> TransferRequest {
        // The resume data the task was made from, or what a retry continues: the same rules either way.
        let (continuation, target) = core.withLock { ($0.downloadContinuation, $0.downloadContinuationTarget) }
        let offset = continuation?.bytesReceived ?? 0
        var request = request
        // Resume data that a redirect led to another origin keeps that origin's rule for every attempt from it: one
        // that starts the file over (no continuation left) too, since its URL is the resume data's, on that origin.
        let leavesOrigin =
            (offset > 0 && target.map { !RedirectRules.isSameOrigin(request.url, $0) } == true)
            || continuation?.leftOrigin == true || resumedFrom?.leftOrigin == true
        if offset > 0, let target {
            // A retry behind a redirect asks where the bytes came from: the redirecting URL would answer the
            // range with its redirect, which is no range of the file.
            request.url = target
        }
        var transfer = session.transferRequest(
            for: request, body: uploadBody?.transferBody(for: self) ?? request.body.map { .data($0) },
            sink: .file(temporaryURL, resumeOffset: offset))
        // Credentials stay behind on another origin, as they did on the redirect: the caller's and the session's.
        if leavesOrigin { RedirectRules.dropCredentials(from: &transfer) }
        if offset > 0, let validator = continuation?.validator {
            // Not CURLOPT_RESUME_FROM: it fails with CURLE_RANGE_ERROR when the server answers 200; the
            // file sink decides from the status instead (206 appends, 200 restarts).
            transfer.headers.replaceOrAdd(name: "Range", value: "bytes=\(offset)-")
            transfer.headers.replaceOrAdd(name: "If-Range", value: validator)
        }
        return transfer
    }

    /// A continuing attempt answered with a transient status (`5xx`, `408`, `429`) was refused by the file
    /// sink, which never writes an error page over the partial file: the file is as it was, and the attempt
    /// failed with its status, as any other attempt answered with an error status does. So the retrier sees
    /// ``HeraldError/Code/unacceptableStatusCode``, and a failure keeps the partial file and its resume data.
    /// Other refusals (a `4xx` such as a `416` naming another length, a range that starts elsewhere) stay
    /// ``HeraldError/Code/cannotResume``. A `416` naming the file's own length as the whole representation's
    /// completes the download with the file as it is.
    override func proceed(after outcome: TaskOutcome) {
        if outcome.error == nil, outcome.file?.wasAlreadyComplete == true {
            // The server's 416 says the file already holds every byte: the download is done, its file moved as
            // any complete one's. Not a failure for a retrier to see.
            takeCookies(from: outcome)
            return completeTransfer(outcome)
        }
        guard let error = outcome.error, error.code == .cannotResume, let response = outcome.response,
            Self.isTransient(status: response.statusCode),
            let continuation = core.withLock({ $0.downloadContinuation }), continuation.bytesReceived > 0
        else { return super.proceed(after: outcome) }
        var kept = outcome
        kept.error = HeraldError(
            .unacceptableStatusCode,
            "The server answered \(response.statusCode) to the request for the rest of the download; the "
                + "\(continuation.bytesReceived) bytes already written are kept.",
            url: response.url, response: response, metrics: outcome.metrics)
        super.proceed(after: kept)
    }

    /// Whether `status` is one a server answers for a while only: worth trying again later.
    static func isTransient(status: Int) -> Bool {
        status >= 500 || status == 408 || status == 429
    }

    /// After a retry, a download continues from the bytes its file holds when it can (see
    /// `continuation(after:)`), and starts over otherwise.
    override func prepareRetry(after outcome: TaskOutcome) -> Int64? {
        let next = continuation(after: outcome)
        let redirected = machine { $0.hops.redirectCount > 0 }
        core.withLock {
            $0.downloadContinuation = next
            // Where the bytes come from: the URL a redirect led this attempt to, or, for an attempt that went
            // straight to the target an earlier one found, that target still. Forgotten when starting over.
            $0.downloadContinuationTarget = next == nil ? nil : redirected ? next?.url : $0.downloadContinuationTarget
        }
        return next?.bytesReceived
    }

    /// A download that was retried and whose last attempt still got an error status fails with it: the
    /// error page is not the file it asked for. (A first attempt's error page, never retried, is moved as
    /// any complete transfer is, so that a caller without a retrier can read it.)
    override func finalError(of outcome: TaskOutcome, failure: HeraldError, attempt: Int) -> HeraldError? {
        outcome.error ?? (attempt > 1 ? failure : nil)
    }

    override func completionResult(for outcome: TaskOutcome, serializer: any ResponseSerializer) -> CompletionResult {
        // A task made from resume data lets go of the partial file it claimed once the file is moved, deleted or
        // kept (not before: a task of another session could open it meanwhile), and before a handler that may make
        // the next task from the resume data it is given. Once: a second release could drop that next task's claim.
        var claimHeld = resumedFrom != nil
        func releaseClaim() {
            guard claimHeld else { return }
            claimHeld = false
            session.releasePartialFile(temporaryURL.standardizedFileURL.path)
        }
        defer { releaseClaim() }
        var outcome = outcome
        if outcome.error == nil, let response = outcome.response, !(200..<300).contains(response.statusCode),
            outcome.file?.receivedBody != true
        {
            // The download ended on a redirect or challenge no one answered: its body never reached the file.
            if let continuation = core.withLock({ $0.downloadContinuation }), continuation.bytesReceived > 0 {
                // A continued download's partial file is kept with its resume data rather than moved as the result.
                outcome.error = HeraldError(
                    .cannotResume,
                    "The server answered the resumed download with status \(response.statusCode); the "
                        + "\(continuation.bytesReceived) bytes already written are kept.",
                    url: response.url, statusCode: response.statusCode, response: response, metrics: outcome.metrics)
            } else if machine({ $0.hops.attempt }) > 1, let failure = Self.retryableFailure(of: outcome) {
                // A retried download whose last attempt got an error status fails with it, as one whose answer
                // had a body does (``finalError(of:failure:attempt:)``).
                outcome.error = failure
            } else {
                // Whatever the file holds is an earlier attempt's, which started it over: it is not this answer's.
                truncate(temporaryURL.path, 0)
            }
        }
        if outcome.error == nil, let response = outcome.response, let refusal = unaskedPart(response) {
            // What reached the file is a part, not the file: it fails, keeping the part as resume data when it is the
            // file's start and can be continued.
            outcome.error = refusal
        }
        var keepTemporaryFile = false
        var producedResumeData: Data?
        var resumeDataAnswer: (@Sendable () -> Void)?
        if case .answer(let resumeDataHandler) = transition({ $0.resumeDataAnswered() }) {
            let resumeData = outcome.error == nil ? nil : makeResumeData(from: outcome)
            producedResumeData = resumeData
            keepTemporaryFile = resumeData != nil
            if keepTemporaryFile { releaseClaim() }
            // Called where the completion handler is, just before it: on a concurrent completion queue two blocks
            // enqueued in order may run together.
            resumeDataAnswer = { resumeDataHandler(resumeData) }
        }
        var result = settle(outcome, keepTemporaryFile: keepTemporaryFile, producedResumeData: producedResumeData)
        result.resumeDataAnswer = resumeDataAnswer
        return result
    }

    /// Why `response`, the last attempt's, is no whole file though that attempt asked for one, or `nil`: a `206`
    /// answering a request with no `Range` (neither the caller's, its adapter's, nor a continuation's) that is not
    /// the whole representation, bytes `0` to its last. A resumed attempt's `206` is checked against the file as it
    /// arrives.
    private func unaskedPart(_ response: HTTPResponse) -> HeraldError? {
        guard response.statusCode == 206, !originalRequest.headers.contains("Range") else { return nil }
        // The caller's `Range`, or one its adapter added to the last attempt: that part is what was asked for. Read
        // only for a `206`: every other download completes without taking the task's lock for it.
        let sent = machine { $0.hops.attemptRequest } ?? originalRequest
        guard !sent.headers.contains("Range"), core.withLock({ ($0.downloadContinuation?.bytesReceived ?? 0) == 0 })
        else { return nil }
        let contentRange = response.headers["Content-Range"]
        if let range = ContentRange.parse(contentRange), range.start == 0,
            let length = range.completeLength, range.end + 1 == length
        {
            return nil
        }
        return HeraldError(
            .badServerResponse,
            "The server answered the download, which asked for no range, with part of the file (Content-Range: "
                + "\(contentRange ?? "none")).", url: response.url, statusCode: 206, response: response)
    }

    /// The task's result once any resume data asked for is made: the error, with the resume data it carries, or
    /// the file moved where it goes.
    private func settle(
        _ outcome: TaskOutcome, keepTemporaryFile: Bool, producedResumeData: Data?
    ) -> CompletionResult {
        if let error = outcome.error {
            if !keepTemporaryFile, error.code != .cancelled, let resumeData = makeResumeData(from: outcome) {
                // A transfer that broke part-way keeps its bytes: they can be resumed, not lost. The error
                // carries the resume data too, for the `async` forms, which never hand out the task.
                transition { $0.resumeDataMadeAfterFailure(resumeData) }
                return CompletionResult(error: error.adding(resumeData: resumeData))
            }
            if !keepTemporaryFile { removeTemporaryFile() }
            // The cancellation carries the data it produced too, whatever queue runs the two handlers.
            return CompletionResult(error: producedResumeData.map { error.adding(resumeData: $0) } ?? error)
        }
        guard let response = outcome.response else {
            removeTemporaryFile()
            return CompletionResult(
                error: HeraldError(
                    .badServerResponse, "The transfer ended without a response.", url: originalRequest.url))
        }
        return moveFile(for: response)
    }

    // MARK: - moving

    private func moveFile(for response: HTTPResponse) -> CompletionResult {
        let chosen: URL?
        if let destination {
            chosen = destination(temporaryURL, response)
        } else {
            chosen = session.downloadTaskDidFinishDownloading?(self, temporaryURL, response)
        }
        guard let destinationURL = chosen,
            destinationURL.standardizedFileURL.path != temporaryURL.standardizedFileURL.path
        else {
            return CompletionResult(handlerObject: temporaryURL, assetPath: temporaryURL)
        }
        do {
            try Self.moveItem(at: temporaryURL, to: destinationURL, options: session.configuration.downloadMoveOptions)
            return CompletionResult(handlerObject: destinationURL, assetPath: destinationURL, fileWasMoved: true)
        } catch {
            // With the response: whether the kept file is the body asked for or an error page is the caller's to
            // tell, as for a move that succeeded.
            let failure = HeraldError(
                .downloadMoveFailed,
                "Moving the download to \(destinationURL.path) failed (\(error.localizedDescription)); "
                    + "the file is kept at \(temporaryURL.path).",
                underlying: error, url: originalRequest.url, keptFileURL: temporaryURL, response: response)
            session.eventPoster.postMoveFailure(
                of: self, error: failure, sourceURL: temporaryURL, destinationURL: destinationURL)
            return CompletionResult(handlerObject: temporaryURL, assetPath: temporaryURL, error: failure)
        }
    }

    /// Moves the downloaded file to `destination` as `options` say. `copy` copies a file to a path that doesn't
    /// exist yet, and `makeLink` is `link(2)` (tests replace them to make a copy fail, or to stand for a file
    /// system without hard links).
    static func moveItem(
        at source: URL, to destination: URL, options: DownloadMoveOptions,
        copy: (URL, URL) throws -> Void = { try FileManager.default.copyItem(at: $0, to: $1) },
        makeLink: (String, String) -> Int32 = { link($0, $1) }
    ) throws {
        let fileManager = FileManager.default
        if options.contains(.createIntermediateDirectories) {
            try fileManager.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        if options.contains(.replaceExistingFile) {
            // rename(2) replaces a file atomically; it refuses to replace a directory with a file.
            if rename(source.path, destination.path) == 0 { return }
            let code = errno
            guard code == EXDEV else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
            // Another file system: copied beside the destination first, then renamed over it, so the file it
            // replaces stays whole until the new one is (a copy that fails, on a full disk, loses nothing).
            return try copyBeside(destination, from: source, copy: copy) { rename($0, $1) }
        }
        // Never replacing: a hard link gives the file its new name only if the name is free, in one step (a check
        // before a rename would race another move to the same name, and rename would replace what won).
        if makeLink(source.path, destination.path) == 0 {
            unlink(source.path)
            return
        }
        let code = errno
        switch code {
        case EXDEV:
            // Another file system: copied beside the destination, then linked to its name, so that the name never
            // shows a partial copy, not even to a process killed mid-copy. One without hard links (a FAT or exFAT
            // drive) gets the copy renamed onto the name once it is reserved.
            try copyBeside(destination, from: source, copy: copy) { from, to in
                if makeLink(from, to) == 0 { return 0 }
                guard Self.lacksHardLinks(errno) else { return -1 }
                return Self.renameOntoFreeName(from, to)
            }
        case _ where Self.lacksHardLinks(code):
            // A file system without hard links (FAT, some FUSE ones).
            guard Self.renameOntoFreeName(source.path, destination.path) == 0 else { throw lastError() }
        default:
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    /// Renames `from` to `to` only if `to` is free, where there are no hard links to do it in one step: the name
    /// is first reserved with an empty file made with `O_EXCL` (which fails on a taken name, whoever takes it
    /// meanwhile), then the file is renamed over that placeholder. 0, or -1 with `errno` set (`EEXIST`: taken).
    private static func renameOntoFreeName(_ from: String, _ to: String) -> Int32 {
        let placeholder = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard placeholder >= 0 else { return -1 }
        close(placeholder)
        if rename(from, to) == 0 { return 0 }
        let code = errno
        unlink(to)
        errno = code
        return -1
    }

    /// Whether `link(2)` failed with `code` because the file system has no hard links (FAT, some FUSE ones).
    private static func lacksHardLinks(_ code: Int32) -> Bool {
        code == EPERM || code == EOPNOTSUPP || code == ENOSYS || code == EMLINK
    }

    /// Copies `source` to a new name beside `destination`, syncs the copy, gives it `destination`'s name with
    /// `publish` (`rename`, or `link`, which fails on a name taken), then removes the source. A step that fails
    /// removes the copy and leaves the source.
    private static func copyBeside(
        _ destination: URL, from source: URL, copy: (URL, URL) throws -> Void,
        publish: (_ from: String, _ to: String) -> Int32
    ) throws {
        let sibling = destination.deletingLastPathComponent().appendingPathComponent(
            ".herald-\(UUID().uuidString.lowercased()).part")
        do {
            try copy(source, sibling)
            try sync(sibling)
            guard publish(sibling.path, destination.path) == 0 else { throw lastError() }
        } catch {
            unlink(sibling.path)
            throw error
        }
        // Linked: the copy's own name goes (renamed, it is already gone).
        unlink(sibling.path)
        unlink(source.path)
    }

    /// Flushes the file at `url` to its disk, so that the name it is given next names whole bytes after a crash;
    /// a write the disk couldn't take (a quota, a network file system) fails here.
    private static func sync(_ url: URL) throws {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw lastError() }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw lastError() }
    }

    private static func lastError() -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }

    private func removeTemporaryFile() {
        unlink(temporaryURL.path)
    }

    // MARK: - resume data

    /// Whether `error` is a refusal to continue the file that asking again won't change: a `404`, `410`, `412`
    /// or `416` (naming another length: the resource is gone or changed), a range answer of another version, or a
    /// file cut short meanwhile (``PartialFileOutdated``). Not another status (a `403` a retrier may answer by
    /// refreshing a token, a redirect or a challenge no one answered, a `5xx`), nor a range answer that started
    /// elsewhere or stopped short (a cache in between may have sent it): a later attempt may be answered. Resume
    /// data kept after a refusal for good would be refused again, for ever.
    static func refusedForGood(_ error: HeraldError?) -> Bool {
        guard let error, error.code == .cannotResume else { return false }
        if error.underlying is PartialFileOutdated { return true }
        return [404, 410, 412, 416].contains(error.statusCode ?? 0)
    }

    /// Resume data for the file as the transfer left it, or `nil` when it can't be resumed.
    private func makeResumeData(from outcome: TaskOutcome) -> Data? {
        continuation(after: outcome)?.encoded()
    }

    /// What continues the file as the transfer left it — for resume data and for a retry alike — or `nil`
    /// when it can't be continued: not a `GET`, a request with a `Range` of the caller's (the file holds that
    /// range, and asking for the rest of the resource from its byte count would splice two parts), no validator
    /// to send as `If-Range` (`DownloadResumeData.validator`), the file's bytes are not those of a `200` or `206`
    /// body as sent, or the server
    /// refused to continue it for good (see ``refusedForGood(_:)``).
    private func continuation(after outcome: TaskOutcome) -> DownloadResumeData? {
        guard originalRequest.method == "GET", !originalRequest.headers.contains("Range") else { return nil }
        // Bytes the file's close said may be lost are no prefix to continue: the next attempt starts again.
        if outcome.file?.mayHaveLostWrites == true { return nil }
        var resume: DownloadResumeData
        // A file the server said was already whole (a `416` naming its length) took none of that answer's body:
        // it is still exactly what the attempt continued, whatever became of the answer after.
        if let file = outcome.file, file.receivedBody, !file.wasAlreadyComplete {
            // Decoded bytes (a data task that became a download after its body's decoding began) are no prefix of
            // the representation a range request continues: the next attempt starts again.
            // Nor are the bytes of a range starting elsewhere than at the representation's first byte, which a
            // server sent unasked: the rest asked for from their count would be spliced onto them.
            guard let response = outcome.response, response.statusCode == 200 || response.statusCode == 206,
                !file.holdsDecodedBody, !file.holdsPartFromElsewhere
            else { return nil }
            // Continued where the bytes came from, after any redirect: asked again, the redirecting URL would
            // answer a range request with its redirect, which is no range of the file. Credential fields don't
            // go along to another origin, as on a redirect.
            var headers = originalRequest.headers
            let continued = core.withLock { $0.downloadContinuation }
            // Another origin than the first request's: this task's own redirect led there, or the resume data it
            // continues says one did.
            let leftOrigin =
                !RedirectRules.isSameOrigin(originalRequest.url, response.url) || continued?.leftOrigin == true
            if leftOrigin {
                for name in RedirectRules.originBoundHeaders { headers.remove(name: name) }
            }
            // Sent back as `If-Range`: never one that holds a line break.
            var entityTag = ResponseCachePolicy.sendableValidator(response.headers["ETag"])
            var lastModified = DownloadResumeData.strongLastModified(
                ResponseCachePolicy.sendableValidator(response.headers["Last-Modified"]), date: response.headers["Date"]
            )
            if response.statusCode == 206, let continued {
                // A range answer need not repeat every validator (RFC 9110 §15.3.7 asks for the ETag only, and
                // only when a 200 would send one); the file accepted it as the version it continues, whose
                // validators still name it.
                entityTag = entityTag ?? continued.entityTag
                lastModified = lastModified ?? continued.lastModified
            }
            resume = DownloadResumeData(
                url: response.url, headers: headers.map { [$0.name, $0.value] },
                bytesReceived: file.byteCount, entityTag: entityTag, lastModified: lastModified,
                partialFilePath: temporaryURL.path, leftOrigin: leftOrigin ? true : nil)
        } else if let current = core.withLock({ $0.downloadContinuation }), !Self.refusedForGood(outcome.error) {
            // No new byte reached the file: it is exactly what the attempt continued.
            resume = current
        } else {
            return nil
        }
        guard resume.validator != nil else { return nil }
        resume.partialFilePath = temporaryURL.path
        return resume
    }
}
