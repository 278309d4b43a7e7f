import Foundation

// AF's `GET:parameters:headers:progress:success:failure:` and its siblings: each builds the request, creates
// the task and resumes it. The completion handler runs exactly once on the session's completion queue, before
// `taskDidComplete` is posted; progress handlers run there too, coalesced, never after it. A request that
// can't be built throws before any task exists (no notification is posted, nothing is sent).
extension HTTPSessionManager {
    /// Sends a `GET`, parameters in the query; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - progress: The response body's progress; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func get(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask(
                "GET", path, parameters: parameters, headers: headers, downloadProgress: progress,
                completionHandler: completionHandler))
    }

    /// Sends a `HEAD`, parameters in the query; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func head(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask("HEAD", path, parameters: parameters, headers: headers, completionHandler: completionHandler))
    }

    /// Sends a `POST`, parameters in the body; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - progress: The request body's progress; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func post(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask(
                "POST", path, parameters: parameters, headers: headers, uploadProgress: progress,
                completionHandler: completionHandler))
    }

    /// Sends a `POST` with a `multipart/form-data` body streamed in constant memory: AF's
    /// `POST:parameters:headers:constructingBodyWithBlock:progress:success:failure:`.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Form fields added before `constructingBody` runs (see
    ///     ``multipartFormData(parameters:_:)``); default none.
    ///   - headers: Header fields of this request (its `Content-Type` is the form's); default none.
    ///   - constructingBody: Appends the parts; runs once, now, on the calling thread.
    ///   - progress: The request body's progress; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The upload task, resumed.
    /// - Throws: ``HeraldError`` when the request or a part can't be built, or the task created.
    @discardableResult
    public func post(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        constructingBody: (inout MultipartFormData) throws -> Void,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> UploadTask {
        let form = try multipartFormData(parameters: parameters, constructingBody)
        let request = Request(url: try url(for: path), method: "POST", headers: headers)
        return try started(
            session.uploadTask(
                with: request, multipartFormData: form, progress: progress, completionHandler: completionHandler))
    }

    /// Sends a `PUT`, parameters in the body; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func put(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask("PUT", path, parameters: parameters, headers: headers, completionHandler: completionHandler))
    }

    /// Sends a `PATCH`, parameters in the body; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func patch(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask("PATCH", path, parameters: parameters, headers: headers, completionHandler: completionHandler))
    }

    /// Sends a `DELETE`, parameters in the query; returns the running task.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - completionHandler: The response, the session serializer's output and the error.
    /// - Returns: The task, resumed.
    /// - Throws: ``HeraldError`` when the request can't be built or the task created.
    @discardableResult
    public func delete(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try started(
            dataTask("DELETE", path, parameters: parameters, headers: headers, completionHandler: completionHandler))
    }

    private func started<Task: SessionTask>(_ task: Task) -> Task {
        task.resume()
        return task
    }
}
