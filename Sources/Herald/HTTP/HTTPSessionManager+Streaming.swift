import Foundation

// Streamed responses relative to the base URL: the session's `bytes(for:)` and `events(for:)` with the
// request built as the verbs build theirs.
extension HTTPSessionManager {
    /// Sends `method` to `path` with `parameters` encoded by ``requestSerializer`` and returns the response
    /// head and its body as it arrives: ``SessionManager/bytes(for:bufferPolicy:)`` for a request built by
    /// ``request(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - method: The HTTP method; default `"GET"`.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request; default none.
    ///   - bufferPolicy: The watermarks and the largest chunk; default ``StreamBufferPolicy/default``.
    /// - Returns: The response head and its body.
    /// - Throws: ``HeraldError``: what building the request throws, then what
    ///   ``SessionManager/bytes(for:bufferPolicy:)`` throws.
    public func bytes(
        _ path: String, method: String = "GET", parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        bufferPolicy: StreamBufferPolicy = .default
    ) async throws(HeraldError) -> (HTTPResponse, ResponseBodyStream) {
        try await session.bytes(
            for: request(method, path, parameters: parameters, headers: headers), bufferPolicy: bufferPolicy)
    }

    /// Server-sent events from `path`: ``SessionManager/events(for:options:)`` for a `GET` built by
    /// ``request(_:_:parameters:headers:)``.
    ///
    /// - Parameters:
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query by ``requestSerializer``; default none.
    ///   - headers: Header fields of each connection's request; default none.
    ///   - options: Reconnection and buffering; default ``EventSourceOptions/default``.
    /// - Returns: The events, in order; its ``ServerSentEvents/withOpen`` adds each connection's opening.
    /// - Throws: ``HeraldError`` when the request can't be built (``HeraldError/Code/badURL``,
    ///   ``HeraldError/Code/invalidRequest``); the connections' errors are the sequence's.
    public func events(
        _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        options: EventSourceOptions = .default
    ) throws(HeraldError) -> ServerSentEvents {
        session.events(for: try request("GET", path, parameters: parameters, headers: headers), options: options)
    }
}
