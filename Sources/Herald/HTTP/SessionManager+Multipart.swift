import Foundation

extension SessionManager {
    /// Creates a suspended upload task that sends `multipartFormData` as the request body, streamed part by
    /// part in constant memory; call ``SessionTask/resume()`` to start it.
    ///
    /// The request goes out with the form's ``MultipartFormData/contentType`` as `Content-Type` (replacing
    /// the request's) and its ``MultipartFormData/contentLength`` as `Content-Length`. File parts are read
    /// from disk and stream parts pulled as the connection takes them, read ahead on the upload task's
    /// hook queue (never the engine's loop thread); a resend
    /// (307/308, authentication) rereads the files and remakes the streams. A file that changed size since
    /// it was appended, or a stream shorter than declared, fails the task with ``HeraldError/Code/fileIO``
    /// or ``HeraldError/Code/bodyStream``. The response is serialized as for a data task.
    ///
    /// - Parameters:
    ///   - request: The request, typically a `POST`; validated now (see ``Request``). Its `body` is ignored.
    ///   - multipartFormData: The form.
    ///   - progress: Called with the upload progress on ``completionQueue``, coalesced, never after the
    ///     completion handler started; its total is the form's length.
    ///   - completionHandler: Called exactly once on ``completionQueue`` with the response, the serializer's
    ///     output and the error, before `taskDidComplete` is posted.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/sessionInvalidated`` after
    ///   ``invalidate(cancelingTasks:)``, or a validation error for a malformed request.
    public func uploadTask(
        with request: Request, multipartFormData: MultipartFormData,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: TaskCompletionHandler? = nil
    ) throws(HeraldError) -> UploadTask {
        var request = request
        request.body = nil
        request.headers.replaceOrAdd(name: "Content-Type", value: multipartFormData.contentType)
        return try makeUploadTask(
            with: request, body: Self.uploadBody(of: multipartFormData), progress: progress,
            completionHandler: completionHandler)
    }

    /// The upload body of a form: its exact length, and a fresh stream for every send.
    static func uploadBody(of form: MultipartFormData) -> UploadTask.Body {
        .sized(length: form.contentLength) { form.makeStream() }
    }
}
