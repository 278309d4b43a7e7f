import Foundation
import HeraldEngine

// `async` forms of the task factories: each creates a task, resumes it and returns when its completion
// handler would have run. The threading and cancellation contract is documented on `data(for:)`.
extension SessionManager {
    // MARK: - data

    /// Loads `request` and returns the body and the response, like URLSession's `data(for:)`.
    ///
    /// **Threading.** Call it from any context; it suspends (never blocks a thread) while the transfer runs.
    /// The task it creates is an ordinary task of the session: listed in ``tasks`` while it runs, posting
    /// `taskDidResume` and exactly one `taskDidComplete` on ``notificationCenter``, its completion step run on
    /// ``completionQueue`` (inside ``completionGroup``); the call returns after that step, before or while
    /// `taskDidComplete` is posted. When nothing of yours would run on the completion queue for the task (no
    /// `taskDidComplete`, `dataTaskDidReceiveData` or `taskDidSendBodyData` hook, no progress observer, no
    /// response cache, no completion group, a completion queue of the session's own) and the calling task
    /// prefers no task executor, the step, which then runs none of your code, is taken where the task
    /// completed instead (on the engine's loop thread when its loop iteration completed no other task): one
    /// thread hand-off fewer before the call returns.
    ///
    /// **Cancellation.** Cancelling the calling Swift task calls ``SessionTask/cancel()``: a running transfer
    /// is stopped, its connection closed, and the call throws ``HeraldError/Code/cancelled``. If the Swift
    /// task is already cancelled, the session task is cancelled before it is resumed: nothing is sent, no
    /// `taskDidResume` is posted, and its one `taskDidComplete` reports ``HeraldError/Code/cancelled``.
    /// Cancellation arriving after the task completed changes nothing: the call returns its result.
    ///
    /// The body is returned as it arrived: the session's ``responseSerializer`` is **not** applied, and any
    /// status — a `404`, a `500` — is a success, for you to check. (The `taskDidComplete` payload carries the
    /// body as `responseData` and no `serializedResponse`.) Use ``responseObject(for:)`` or
    /// ``value(for:serializer:)`` for validated, parsed responses.
    ///
    /// - Parameter request: The request; validated before anything is sent (see ``Request``).
    /// - Returns: The whole response body (empty when there was none) and the response head.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/cancelled`` when the Swift task is cancelled, a transport
    ///   error (``HeraldError/Code/timedOut``, ``HeraldError/Code/cannotConnect``, …), a validation error for
    ///   a malformed request, or ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``.
    public func data(for request: Request) async throws(HeraldError) -> (Data, HTTPResponse) {
        let answersAwaitingCaller = Self.callerResumesOnGlobalExecutor
        return try await performAsync { answer throws(HeraldError) in
            var callbacks = TaskCallbacks(completion: Self.rawBodyHandler(answer))
            callbacks.answersAwaitingCaller = answersAwaitingCaller
            return try makeDataTask(with: request, bodyHandling: .raw, callbacks: callbacks)
        }
    }

    /// Loads `request` like ``data(for:)``, then checks the response against `validation`: Alamofire's
    /// `validate()` step.
    ///
    /// Threading and cancellation as for ``data(for:)``. A response that fails the check throws, and the
    /// error keeps what a caller needs to report it: ``HeraldError/response`` (status and header fields) and
    /// ``HeraldError/responseBody`` (an API's error document, say).
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - validation: The acceptable status codes and content types, for example ``ResponseValidation/default``
    ///     (any 2xx) or ``ResponseValidation/json``.
    /// - Returns: The whole response body and the response head, once they passed the check.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/unacceptableStatusCode`` or
    ///   ``HeraldError/Code/unacceptableContentType`` with the response and its body, or anything
    ///   ``data(for:)`` throws.
    public func data(
        for request: Request, validation: ResponseValidation
    ) async throws(HeraldError) -> (Data, HTTPResponse) {
        let (body, response) = try await data(for: request)
        try validation.validate(response, data: body)
        return (body, response)
    }

    /// Loads `request` and returns the session's ``responseSerializer`` output: the `async` form of
    /// ``dataTask(with:uploadProgress:downloadProgress:completionHandler:)``.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// The serializer is read when the transfer completes, as for any data task, and its validation applies:
    /// with the default ``JSONResponseSerializer`` a `404` throws ``HeraldError/Code/unacceptableStatusCode``.
    ///
    /// - Parameter request: The request; validated before anything is sent (see ``Request``).
    /// - Returns: The serializer's output (for example a ``JSONValue``) and the response head.
    /// - Throws: ``HeraldError``: the serializer's error, ``HeraldError/Code/cancelled`` when the Swift task is
    ///   cancelled, a transport error, a validation error, or ``HeraldError/Code/sessionInvalidated``.
    public func responseObject(for request: Request) async throws(HeraldError) -> (any Sendable, HTTPResponse) {
        try await performAsync { answer throws(HeraldError) in
            try dataTask(with: request, completionHandler: Self.objectHandler(answer, task: "A data task"))
        }
    }

    /// Loads `request` and turns the response into a value with `serializer`, whatever the session's
    /// ``responseSerializer`` is.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// The body is collected as by ``data(for:)``, then `serializer` validates and parses it before the call
    /// returns, on the global concurrent executor (or the calling task's preferred task executor): never on the
    /// caller's actor, so a `@MainActor` caller's parse is off the main thread.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - serializer: Validates the response and produces the value, for example
    ///     `DecodableResponseSerializer(Item.self)`.
    /// - Returns: The serializer's output and the response head.
    /// - Throws: ``HeraldError``: everything ``data(for:)`` throws, then the serializer's error
    ///   (``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/serializationFailed``, …).
    public func value<Serializer: ResponseSerializer>(
        for request: Request, serializer: Serializer
    ) async throws(HeraldError) -> (Serializer.Output, HTTPResponse) {
        let (body, response) = try await data(for: request)
        return (try serializer.serialize(response: response, data: body), response)
    }

    /// Loads `request` and decodes its JSON body into `type`: ``value(for:serializer:)`` with a
    /// ``DecodableResponseSerializer``.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// The session's ``responseSerializer`` is not used. The response must pass ``ResponseValidation/json``
    /// (status `200..<300`, a JSON content type); an absent body (`204`, `205`, whitespace only) decodes as
    /// JSON `null`, so an `Optional` type yields `nil`.
    ///
    /// - Parameters:
    ///   - type: The type to decode, for example `Item.self`.
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - decoder: The decoder for the body; default a `JSONDecoder` with default strategies.
    /// - Returns: The decoded value and the response head.
    /// - Throws: ``HeraldError``: everything ``data(for:)`` throws, then
    ///   ``HeraldError/Code/unacceptableStatusCode`` or ``HeraldError/Code/unacceptableContentType`` (with the
    ///   response and its body), or ``HeraldError/Code/serializationFailed`` with the `DecodingError` as
    ///   ``HeraldError/underlying`` (for a `JSONValue`, parsed as ``JSONResponseSerializer`` parses, the
    ///   parser's error).
    public func decode<T: Decodable & Sendable>(
        _ type: T.Type, for request: Request, decoder: JSONDecoder = JSONDecoder()
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await value(for: request, serializer: DecodableResponseSerializer(type, decoder: decoder))
    }

    // MARK: - upload

    /// Sends `data` as the body of `request` and returns the response body and head, like URLSession's
    /// `upload(for:from:)`.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// As with ``data(for:)`` the response body is returned raw and any status is a success.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``). Its `body` is ignored.
    ///   - data: The body, sent with `Content-Length`.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced, never after the call
    ///     returned; default none.
    /// - Returns: The whole response body and the response head.
    /// - Throws: ``HeraldError`` as ``data(for:)`` does.
    public func upload(
        for request: Request, from data: Data, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(HeraldError) -> (Data, HTTPResponse) {
        let answersAwaitingCaller = Self.callerResumesOnGlobalExecutor
        return try await performAsync { answer throws(HeraldError) in
            try makeUploadTask(
                with: request, body: .data(data), progress: progress,
                completionHandler: Self.rawBodyHandler(answer), bodyHandling: .raw,
                answersAwaitingCaller: answersAwaitingCaller)
        }
    }

    /// Streams the file at `fileURL` as the body of `request`, in constant memory, and returns the response
    /// body and head, like URLSession's `upload(for:fromFile:)`.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// As with ``data(for:)`` the response body is returned raw and any status is a success.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``). Its `body` is ignored.
    ///   - fileURL: A readable regular file; its size when the transfer starts is sent as `Content-Length`.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced; default none.
    /// - Returns: The whole response body and the response head.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when the file can't be read, otherwise as
    ///   ``data(for:)`` does.
    public func upload(
        for request: Request, fromFile fileURL: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(HeraldError) -> (Data, HTTPResponse) {
        let answersAwaitingCaller = Self.callerResumesOnGlobalExecutor
        return try await performAsync { answer throws(HeraldError) in
            try Self.checkUploadFile(fileURL)
            return try makeUploadTask(
                with: request, body: .file(fileURL), progress: progress,
                completionHandler: Self.rawBodyHandler(answer), bodyHandling: .raw,
                answersAwaitingCaller: answersAwaitingCaller)
        }
    }

    /// Sends `multipartFormData` as the body of `request`, as
    /// ``uploadTask(with:multipartFormData:progress:completionHandler:)`` does, and returns the response body
    /// raw, whatever its status, as ``data(for:)`` does: for callers that apply a serializer of their own.
    func upload(
        for request: Request, multipartFormData: MultipartFormData,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(HeraldError) -> (Data, HTTPResponse) {
        var request = request
        request.body = nil
        request.headers.replaceOrAdd(name: "Content-Type", value: multipartFormData.contentType)
        let answersAwaitingCaller = Self.callerResumesOnGlobalExecutor
        return try await performAsync { answer throws(HeraldError) in
            try makeUploadTask(
                with: request, body: Self.uploadBody(of: multipartFormData), progress: progress,
                completionHandler: Self.rawBodyHandler(answer), bodyHandling: .raw,
                answersAwaitingCaller: answersAwaitingCaller)
        }
    }

    // MARK: - download

    /// Downloads the response body of `request` to a file and moves it to `fileURL`: the `async` form of
    /// ``downloadTask(with:progress:destination:completionHandler:)``.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// The body streams to a temporary file in constant memory; after a complete transfer — whatever the
    /// status, which is yours to check — it is moved to `fileURL` following
    /// ``SessionConfiguration/downloadMoveOptions``. On cancellation the temporary file is deleted, and on a
    /// transport error too unless the download could be continued (a `GET` whose response had a strong
    /// `ETag` or a `Last-Modified`, some of whose body arrived): then the partial file stays in the session's
    /// temporary directory and the thrown error's ``HeraldError/resumeData`` continues it, with
    /// ``download(resumingWith:to:progress:)``. A download that was retried and still got an error status
    /// throws ``HeraldError/Code/unacceptableStatusCode``.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - fileURL: Where the file goes.
    ///   - progress: Called with the download progress on ``completionQueue``, coalesced; default none.
    /// - Returns: Where the file is (`fileURL`) and the response head.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/downloadMoveFailed`` when the move failed (the file is then
    ///   kept, its URL in the error's ``HeraldError/keptFileURL``, and is yours to move or delete),
    ///   ``HeraldError/Code/cancelled`` when the Swift task is cancelled, a transport error, a validation
    ///   error, ``HeraldError/Code/fileIO`` or ``HeraldError/Code/sessionInvalidated``.
    public func download(
        for request: Request, to fileURL: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(HeraldError) -> (URL, HTTPResponse) {
        try await download(for: request, progress: progress) { _, _ in fileURL }
    }

    /// Downloads the response body of `request` to a file and moves it where `destination` says: the `async`
    /// form of ``downloadTask(with:progress:destination:completionHandler:)``.
    ///
    /// Threading and cancellation as for ``data(for:)``: cancelling the Swift task cancels the transfer and
    /// throws ``HeraldError/Code/cancelled``.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - progress: Called with the download progress on ``completionQueue``, coalesced; default none.
    ///   - destination: Called once after the whole body is on disk, with the temporary file and the
    ///     response, where ``downloadTask(with:progress:destination:completionHandler:)`` calls it (on
    ///     ``completionQueue`` by default, on a serial queue of the task's completion when you passed a
    ///     completion queue); it must not block. Returns where the file should go. `nil` — or returning the
    ///     temporary URL — leaves the file in the session's temporary directory, yours to move or delete.
    /// - Returns: Where the file ended up and the response head.
    /// - Throws: ``HeraldError`` as ``download(for:to:progress:)`` does.
    public func download(
        for request: Request, progress: (@Sendable (TransferProgress) -> Void)? = nil,
        destination: DownloadDestination? = nil
    ) async throws(HeraldError) -> (URL, HTTPResponse) {
        try await performAsync { answer throws(HeraldError) in
            try downloadTask(
                with: request, progress: progress, destination: destination,
                completionHandler: Self.downloadHandler(answer))
        }
    }

    /// Continues a download from its resume data and moves the whole file to `fileURL`: the `async` form of
    /// ``downloadTask(withResumeData:progress:destination:completionHandler:)``.
    ///
    /// Threading as for ``data(for:)``. Cancelling the Swift task cancels the transfer as
    /// ``DownloadTask/cancel(byProducingResumeData:)`` does: the partial file is kept, and the
    /// ``HeraldError/Code/cancelled`` error thrown carries new resume data (``HeraldError/resumeData``) when the
    /// download can be continued, so a cancel pauses it; the data you passed in names the same file, cut back to
    /// its own length when used. The rest is asked for with `Range` and `If-Range`: a `206`
    /// appends to the partial file, a `200` (the resource changed, or the server ignores ranges) writes it
    /// again from the start, so the file is never a splice of two versions.
    ///
    /// - Parameters:
    ///   - resumeData: Data from ``DownloadTask/cancel(byProducingResumeData:)`` or
    ///     ``DownloadTask/resumeDataAfterFailure``.
    ///   - fileURL: Where the file goes.
    ///   - progress: Called with the download progress on ``completionQueue``, coalesced; the counts include
    ///     the bytes already in the partial file. Default none.
    /// - Returns: Where the file is (`fileURL`) and the last response head.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/cannotResume`` when the data is corrupt or its partial
    ///   file is gone or too short (or the server answers neither `206` nor `200` nor a transient error
    ///   status), otherwise as ``download(for:to:progress:)`` does.
    public func download(
        resumingWith resumeData: Data, to fileURL: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(HeraldError) -> (URL, HTTPResponse) {
        try await performAsync(keepsResumeData: true) { answer throws(HeraldError) in
            try downloadTask(
                withResumeData: resumeData, progress: progress, destination: { _, _ in fileURL },
                completionHandler: Self.downloadHandler(answer))
        }
    }

    // MARK: - helpers

    /// Whether the calling Swift task prefers no task executor, so that its continuation resumes on the global
    /// executor: resuming it only enqueues it, and the task that answers it may complete where its transfer
    /// ended (``TaskCallbacks/answersAwaitingCaller``). A task executor the caller prefers is the caller's code,
    /// to be called from the completion queue.
    static var callerResumesOnGlobalExecutor: Bool {
        withUnsafeCurrentTask { $0?.unownedTaskExecutor == nil }
    }

    /// A download task's completion handler that answers with where the file is and the response head.
    private static func downloadHandler(
        _ answer: @escaping @Sendable (Result<(URL, HTTPResponse), HeraldError>) -> Void
    ) -> DownloadCompletionHandler {
        { response, fileURL, error in
            if let error { return answer(.failure(error)) }
            guard let response, let fileURL else {
                return answer(.failure(HeraldError(.internal, "A download succeeded without a file.")))
            }
            answer(.success((fileURL, response)))
        }
    }

    /// A completion handler for the raw-body tasks, whose object is the body as `Data`.
    private static func rawBodyHandler(
        _ answer: @escaping @Sendable (Result<(Data, HTTPResponse), HeraldError>) -> Void
    ) -> TaskCompletionHandler {
        { response, object, error in
            if let error { return answer(.failure(error)) }
            guard let response, let body = object as? Data else {
                return answer(.failure(HeraldError(.internal, "A transfer succeeded without a response body.")))
            }
            answer(.success((body, response)))
        }
    }

    /// A completion handler answering with the serializer's object with the response head; `task` names the
    /// task in the error for a success without either ("A data task").
    static func objectHandler(
        _ answer: @escaping @Sendable (Result<(any Sendable, HTTPResponse), HeraldError>) -> Void, task: String
    ) -> TaskCompletionHandler {
        { response, object, error in
            if let error { return answer(.failure(error)) }
            guard let response, let object else {
                return answer(.failure(HeraldError(.internal, "\(task) succeeded without a response object.")))
            }
            answer(.success((object, response)))
        }
    }
}
