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
}
