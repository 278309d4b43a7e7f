/// A consistent snapshot of everything a ``TestServer`` has counted.
///
/// All values in one snapshot were read under the same lock, so they agree with each other.
public struct TestServerStatistics: Sendable {
    /// The number of request heads received since the server started.
    public var requestCount: Int
    /// The number of client connections currently open.
    public var openConnections: Int
    /// The number of client connections accepted since the server started.
    public var acceptedConnections: Int
    /// The total number of response body bytes handed to sockets, over all requests.
    ///
    /// Counted when a write completes, so bytes still queued in the server are not included. Raw bytes that
    /// faults write past the HTTP encoder (`/fault/bad-chunked`, `/fault/garbage-status`) count only towards
    /// ``bytesSent``.
    public var bodyBytesSent: Int
    /// The total number of bytes handed to sockets, including status lines, headers and chunk framing.
    public var bytesSent: Int
    /// How many times a streaming response (`/bytes`, `/events`) found its connection unwritable and had to wait
    /// for the client to read: NIO's outbound buffer was above its high-water mark because the socket's send
    /// buffer was full. A client that reads slower than the server writes makes this grow.
    public var sendBlockedCount: Int
    /// Every request received, in arrival order.
    public var requests: [RecordedRequest]
}
