/// One request as the ``TestServer`` saw it, with what the server sent back.
///
/// Records are appended in the order request heads arrive and updated as the response is written, so a
/// record read while a response is still streaming shows the bytes sent so far.
public struct RecordedRequest: Sendable {
    /// The zero-based position of this request among all requests the server received.
    public var sequenceNumber: Int
    /// The request method as sent, for example `"GET"`.
    public var method: String
    /// The request target exactly as sent on the request line, for example `"/bytes/10?chunked=1"`.
    public var uri: String
    /// The path component of ``uri``, without the query, for example `"/bytes/10"`.
    public var path: String
    /// The request header fields in the order they were received, with their original spelling.
    public var headers: [(name: String, value: String)]
    /// The number of request body bytes received so far.
    public var bodyByteCount: Int
    /// The status code of the response, or `nil` while none has been chosen (or for faults that send no head).
    public var responseStatus: Int?
    /// The number of response body bytes the server has handed to the socket for this request.
    public var bodyBytesSent: Int
    /// Whether the server has finished with this request: the response ended or the connection closed.
    public var isComplete: Bool
    /// When the request head arrived, on the continuous clock.
    public var receivedAt: ContinuousClock.Instant
    /// When the server wrote the response head to the connection (just before the bytes leave), on the
    /// continuous clock; `nil` before, and for faults that write their head raw.
    public var responseStartedAt: ContinuousClock.Instant?
    /// The connection the request arrived on, so closing it can complete the request's record.
    var connectionID: ObjectIdentifier?

    /// Returns the value of the first request header named `name`, compared case-insensitively.
    ///
    /// - Parameter name: The header field name, for example `"Range"`.
    /// - Returns: The field value, or `nil` if the request had no such header.
    public func headerValue(_ name: String) -> String? {
        let lowercased = name.lowercased()
        return headers.first { $0.name.lowercased() == lowercased }?.value
    }
}
