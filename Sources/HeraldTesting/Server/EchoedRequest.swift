import Foundation

/// The JSON body of a `/echo` response: the request exactly as the server received it.
///
/// Decode it with `JSONDecoder` to assert on what a client sent:
/// ```swift
/// let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
/// #expect(echoed.method == "PUT")
/// ```
public struct EchoedRequest: Codable, Sendable, Equatable {
    /// The request method, for example `"POST"`.
    public var method: String
    /// The request target as sent on the request line.
    public var uri: String
    /// The request headers, keyed by lowercased name; repeated fields are joined with `", "`.
    public var headers: [String: String]
    /// The request body: UTF-8 text if ``bodyEncoding`` is `"utf8"`, otherwise base64.
    public var body: String
    /// `"utf8"` when the body was valid UTF-8, `"base64"` otherwise.
    public var bodyEncoding: String
    /// The number of body bytes received.
    public var bodyLength: Int

    /// Creates a description of a request.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - uri: The request target.
    ///   - headers: The headers, keyed by lowercased name.
    ///   - body: The body, as UTF-8 text or base64.
    ///   - bodyEncoding: `"utf8"` or `"base64"`.
    ///   - bodyLength: The number of body bytes.
    public init(
        method: String,
        uri: String,
        headers: [String: String],
        body: String,
        bodyEncoding: String,
        bodyLength: Int
    ) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
        self.bodyEncoding = bodyEncoding
        self.bodyLength = bodyLength
    }

    /// The body bytes, decoded from ``body`` according to ``bodyEncoding``; `nil` if that is not possible.
    public var bodyBytes: [UInt8]? {
        guard bodyEncoding == "base64" else { return Array(body.utf8) }
        return Data(base64Encoded: body).map { Array($0) }
    }
}
