import Foundation

// Typed `async` forms: each builds the request as its untyped sibling does, loads it with
// `SessionManager.value(for:serializer:)` and decodes the body with a `DecodableResponseSerializer` —
// threading and cancellation as for the untyped forms (cancelling the Swift task cancels the transfer and
// throws `cancelled`), validation that of `ResponseValidation.json` (status 200..<300, a JSON content type),
// whatever the session's `responseSerializer` is. `as:` has no default, so a call without it keeps picking
// the untyped form.
extension HTTPSessionManager {
    /// Sends `method` to `path` with `parameters` and decodes the JSON response body into `type`.
    ///
    /// Threading and cancellation as for ``response(_:_:parameters:headers:)``: cancelling the Swift task
    /// cancels the transfer and throws ``HeraldError/Code/cancelled``. The session's
    /// ``SessionManager/responseSerializer`` is not used: the body is decoded as by
    /// ``SessionManager/decode(_:for:decoder:)``. For a configured `JSONDecoder`, pass
    /// `DecodableResponseSerializer(T.self, decoder: …)` to ``value(_:_:parameters:headers:serializer:)``.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode, for example `User.self`.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError``: building the request (``HeraldError/Code/badURL``,
    ///   ``HeraldError/Code/invalidRequest``), then what ``SessionManager/decode(_:for:decoder:)`` throws —
    ///   ``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/unacceptableContentType``,
    ///   ``HeraldError/Code/serializationFailed``, ``HeraldError/Code/cancelled``, a transport error.
    public func response<T: Decodable & Sendable>(
        _ method: String, _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await session.decode(type, for: request(method, path, parameters: parameters, headers: headers))
    }

    /// Sends `method` to `path` with `value` as a JSON body (see ``request(_:_:json:headers:)``) and decodes
    /// the JSON response body into `type`: a typed `PUT` or `POST` in one call.
    ///
    /// Threading and cancellation as for ``send(_:_:json:headers:)``: cancelling the Swift task cancels the
    /// transfer and throws ``HeraldError/Code/cancelled``. The session's
    /// ``SessionManager/responseSerializer`` is not used.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, such as `"PUT"`.
    ///   - path: Resolved with ``url(for:)``.
    ///   - value: The body, encoded with `JSONEncoder`, keys sorted.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode the response body into.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/invalidRequest`` when `value` can't be encoded, then what
    ///   ``SessionManager/decode(_:for:decoder:)`` throws.
    public func send<T: Decodable & Sendable>(
        _ method: String, _ path: String, json value: some Encodable, headers: HTTPHeaders = [:],
        as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await session.decode(type, for: request(method, path, json: value, headers: headers))
    }

    /// `GET`, decoding the JSON response body into `type`: see ``response(_:_:parameters:headers:as:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:as:)`` does.
    public func get<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:], as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await response("GET", path, parameters: parameters, headers: headers, as: type)
    }

    /// `POST`, decoding the JSON response body into `type`: see ``response(_:_:parameters:headers:as:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:as:)`` does.
    public func post<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:], as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await response("POST", path, parameters: parameters, headers: headers, as: type)
    }

    /// `PUT`, decoding the JSON response body into `type`: see ``response(_:_:parameters:headers:as:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:as:)`` does.
    public func put<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:], as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await response("PUT", path, parameters: parameters, headers: headers, as: type)
    }

    /// `PATCH`, decoding the JSON response body into `type`: see ``response(_:_:parameters:headers:as:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the body; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:as:)`` does.
    public func patch<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:], as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await response("PATCH", path, parameters: parameters, headers: headers, as: type)
    }

    /// `DELETE`, decoding the JSON response body into `type`: see ``response(_:_:parameters:headers:as:)``.
    ///
    /// A `204 No Content` answer decodes as JSON `null`: pass an `Optional` type, such as `Item?.self`, to
    /// accept one.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - type: The type to decode.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` as ``response(_:_:parameters:headers:as:)`` does.
    public func delete<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:], as type: T.Type
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        try await response("DELETE", path, parameters: parameters, headers: headers, as: type)
    }

    /// `POST` with a `multipart/form-data` body streamed in constant memory, decoding the JSON response body
    /// into `type`: the typed form of ``post(_:parameters:headers:progress:constructingBody:)``.
    ///
    /// Threading and cancellation as for ``response(_:_:parameters:headers:)``: cancelling the Swift task
    /// cancels the transfer and throws ``HeraldError/Code/cancelled``. The session's
    /// ``SessionManager/responseSerializer`` is not used.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Form fields added before `constructingBody` runs; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - progress: The request body's progress on the session's completion queue; default none.
    ///   - type: The type to decode the response body into.
    ///   - constructingBody: Appends the parts; runs once, before anything is sent.
    /// - Returns: The decoded value and the response.
    /// - Throws: ``HeraldError`` from building the form, then as ``response(_:_:parameters:headers:as:)``
    ///   does.
    public func post<T: Decodable & Sendable>(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        progress: (@Sendable (TransferProgress) -> Void)? = nil, as type: T.Type,
        constructingBody: (inout MultipartFormData) throws -> Void
    ) async throws(HeraldError) -> (T, HTTPResponse) {
        let form = try multipartFormData(parameters: parameters, constructingBody)
        let request = Request(url: try url(for: path), method: "POST", headers: headers)
        let (body, response) = try await session.upload(for: request, multipartFormData: form, progress: progress)
        return (try DecodableResponseSerializer(type).serialize(response: response, data: body), response)
    }
}
