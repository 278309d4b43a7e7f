/// What the server has seen and sent, and waiting for it to happen.
extension TestServer {
    /// A consistent snapshot of every counter and request record.
    public var statistics: TestServerStatistics { recorder.statistics }

    /// The number of request heads received.
    public var requestCount: Int { statistics.requestCount }

    /// The number of client connections open right now.
    public var openConnections: Int { statistics.openConnections }

    /// The total number of response body bytes handed to sockets, over all requests.
    ///
    /// Exact: a resumed `/bytes/{n}` download that sent the first `k` bytes, then a `206` for the rest, adds up to
    /// exactly `n`.
    public var bodyBytesSent: Int { statistics.bodyBytesSent }

    /// The total number of bytes handed to sockets, including status lines, headers and chunk framing.
    public var bytesSent: Int { statistics.bytesSent }

    /// Every request received, in arrival order.
    public var requests: [RecordedRequest] { statistics.requests }

    /// The requests whose path (without query) is `path`, in arrival order.
    ///
    /// - Parameter path: A path such as `"/bytes/1024"`.
    /// - Returns: The matching records.
    public func requests(forPath path: String) -> [RecordedRequest] {
        requests.filter { $0.path == path }
    }

    /// The response body bytes sent for requests whose path (without query) is `path`.
    ///
    /// - Parameter path: A path such as `"/bytes/1024"`.
    /// - Returns: The sum of ``RecordedRequest/bodyBytesSent`` over the matching requests.
    public func bodyBytesSent(forPath path: String) -> Int {
        requests(forPath: path).reduce(0) { $0 + $1.bodyBytesSent }
    }

    /// Suspends until `condition` holds for the server's statistics.
    ///
    /// The condition is evaluated right away and then after every change (a connection opening or closing, a
    /// request arriving, body bytes being sent), on whichever thread made the change and never under the server's
    /// lock. Cancelling the calling task ends the wait with `CancellationError`.
    ///
    /// - Parameters:
    ///   - timeout: How long to wait before giving up.
    ///   - condition: The condition to wait for; must be cheap and must not block.
    /// - Throws: ``TestServerError/timedOut(after:)`` if `timeout` passes first.
    public func waitUntil(
        timeout: Duration = .seconds(10),
        _ condition: @escaping @Sendable (TestServerStatistics) -> Bool
    ) async throws {
        try await recorder.wait(timeout: timeout, until: condition)
    }

    /// Suspends until the server has received at least `count` request heads.
    ///
    /// - Parameters:
    ///   - count: The number of requests to wait for.
    ///   - timeout: How long to wait before giving up.
    /// - Throws: ``TestServerError/timedOut(after:)`` if `timeout` passes first.
    public func waitForRequests(count: Int, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil(timeout: timeout) { $0.requestCount >= count }
    }

    /// Suspends until exactly `count` client connections are open, for example `0` after a client went away.
    ///
    /// - Parameters:
    ///   - count: The number of open connections to wait for.
    ///   - timeout: How long to wait before giving up.
    /// - Throws: ``TestServerError/timedOut(after:)`` if `timeout` passes first.
    public func waitForOpenConnections(_ count: Int, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil(timeout: timeout) { $0.openConnections == count }
    }

    /// The bytes `/bytes/{n}` serves at offsets `range`: byte `i` is `UInt8(i % 251)`.
    ///
    /// - Parameter range: Offsets into the representation.
    /// - Returns: The expected bytes, for comparing with what a client received.
    public static func expectedBytes(in range: Range<Int>) -> [UInt8] {
        range.map(BytePattern.byte(at:))
    }

    /// The text that the body of `/gzip` (``gzipBody``) decodes to.
    public static let gzipDecodedText = String(repeating: "Herald decoded this gzip body.\n", count: 4)

    /// The body of `/gzip`: ``gzipDecodedText`` compressed with gzip (no file name, modification time 0).
    public static let gzipBody: [UInt8] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xf3, 0x48, 0x2d, 0x4a, 0xcc, 0x49, 0x51, 0x48,
        0x49, 0x4d, 0xce, 0x4f, 0x49, 0x4d, 0x51, 0x28, 0xc9, 0xc8, 0x2c, 0x56, 0x48, 0xaf, 0xca, 0x2c, 0x50, 0x48,
        0xca, 0x4f, 0xa9, 0xd4, 0xe3, 0xf2, 0xa0, 0xa5, 0x34, 0x00, 0xf5, 0x14, 0x8d, 0x12, 0x7c, 0x00, 0x00, 0x00,
    ]
}
