import Foundation

// `async` forms: each builds the request, runs one task of the session and returns the session's
// `responseSerializer` output with the response head, as `SessionManager.responseObject(for:)` does —
// threading, cancellation (cancelling the Swift task cancels the transfer and throws `cancelled`) and
// validation (a `404` throws `unacceptableStatusCode` with the default JSON serializer) included.
extension HTTPSessionManager {
    /// Sends `method` to `path` with `parameters` and returns the session serializer's output.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output (a ``JSONValue`` with the default serializer) and the response.
    /// - Throws: ``HeraldError``: building the request (``HeraldError/Code/badURL``,
    ///   ``HeraldError/Code/invalidRequest``), then what ``SessionManager/responseObject(for:)`` throws.
    public func response(
        _ method: String, _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:]
    ) async throws(HeraldError) -> (any Sendable, HTTPResponse) {
        try await session.responseObject(for: request(method, path, parameters: parameters, headers: headers))
    }

    /// Sends `method` to `path` with `parameters` and turns the response into a value with `serializer`,
    /// whatever the session's serializer is (see ``SessionManager/value(for:serializer:)``).
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - serializer: Validates the response and produces the value.
    /// - Returns: The value and the response.
    /// - Throws: ``HeraldError`` from building the request, the transfer or the serializer.
    public func value<Serializer: ResponseSerializer>(
        _ method: String, _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        serializer: Serializer
    ) async throws(HeraldError) -> (Serializer.Output, HTTPResponse) {
        try await session.value(
            for: request(method, path, parameters: parameters, headers: headers), serializer: serializer)
    }

    /// Sends `method` to `path` with `value` as a JSON body (see ``request(_:_:json:headers:)``) and returns
    /// the session serializer's output.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, such as `"POST"`.
    ///   - path: Resolved with ``url(for:)``.
    ///   - value: The body, encoded with `JSONEncoder`, keys sorted.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/invalidRequest`` when `value` can't be encoded, then what
    ///   ``SessionManager/responseObject(for:)`` throws.
    public func send(
        _ method: String, _ path: String, json value: some Encodable, headers: HTTPHeaders = [:]
    ) async throws(HeraldError) -> (any Sendable, HTTPResponse) {
        try await session.responseObject(for: request(method, path, json: value, headers: headers))
    }

    /// `GET`: see ``response(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:)`` does.
    public func get(_ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:])
        async throws(HeraldError) -> (any Sendable, HTTPResponse)
    {
        try await response("GET", path, parameters: parameters, headers: headers)
    }

    /// `POST`: see ``response(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:)`` does.
    public func post(_ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:])
        async throws(HeraldError) -> (any Sendable, HTTPResponse)
    {
        try await response("POST", path, parameters: parameters, headers: headers)
    }

    /// `PUT`: see ``response(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:)`` does.
    public func put(_ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:])
        async throws(HeraldError) -> (any Sendable, HTTPResponse)
    {
        try await response("PUT", path, parameters: parameters, headers: headers)
    }

    /// `PATCH`: see ``response(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:)`` does.
    public func patch(_ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:])
        async throws(HeraldError) -> (any Sendable, HTTPResponse)
    {
        try await response("PATCH", path, parameters: parameters, headers: headers)
    }

    /// `DELETE`: see ``response(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:)`` does.
    public func delete(_ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:])
        async throws(HeraldError) -> (any Sendable, HTTPResponse)
    {
        try await response("DELETE", path, parameters: parameters, headers: headers)
    }

    /// `POST` with a `multipart/form-data` body streamed in constant memory: the `async` form of
    /// ``post(_:parameters:headers:constructingBody:progress:completionHandler:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Form fields added before `constructingBody` runs; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - progress: The request body's progress on the session's completion queue; default none.
    ///   - constructingBody: Appends the parts; runs once, before anything is sent.
    /// - Returns: The serializer's output and the response.
    /// - Throws: ``HeraldError`` from building the form, then as ``response(_:_:parameters:headers:)`` does.
    public func post(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        constructingBody: (inout MultipartFormData) throws -> Void
    ) async throws(HeraldError) -> (any Sendable, HTTPResponse) {
        let form = try multipartFormData(parameters: parameters, constructingBody)
        let request = Request(url: try url(for: path), method: "POST", headers: headers)
        return try await session.performAsync { answer throws(HeraldError) in
            try session.uploadTask(
                with: request, multipartFormData: form, progress: progress,
                completionHandler: SessionManager.objectHandler(answer, task: "An upload"))
        }
    }
}
