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
    /// Every request received, in arrival order.
    public var requests: [RecordedRequest]
}
