import Foundation

/// Timings and byte counts curl measured for one transfer.
///
/// Durations are measured from the moment the transfer started (curl's `*_TIME_T` values are cumulative),
/// so `nameLookup ≤ connect ≤ tlsHandshake ≤ timeToFirstByte ≤ total`, where `tlsHandshake` is zero when there
/// was none (plain `http`): a phase's length is the difference only when both ends are
/// non-zero. All but `total` count from the end of
/// the wait for a connection (``timeInQueue``), which `total` includes. On a reused connection the
/// lookup and connect times are about zero. Time spent suspended is included in `total`. A request sent again on
/// a fresh connection, its kept-alive one having died under it, is one transfer: its times count from its start,
/// the first attempt's time included.
public struct TransferMetrics: Sendable, Hashable {
    /// When the transfer was prepared to be handed to curl (when its task resumed, or its hop or retry began).
    public var startDate: Date
    /// Until the host name was resolved.
    public var nameLookup: TimeInterval
    /// Until the TCP connection was established.
    public var connect: TimeInterval
    /// Until the TLS handshake completed (zero for plain HTTP).
    public var tlsHandshake: TimeInterval
    /// Until the first response byte arrived.
    public var timeToFirstByte: TimeInterval
    /// Until the transfer ended.
    public var total: TimeInterval
    /// Time curl spent in redirects it followed itself: zero, since Herald follows redirects as separate
    /// transfers (see ``SessionTask/hopMetrics``).
    public var redirectTime: TimeInterval
    /// Bytes of request headers sent.
    public var requestHeaderBytes: Int64
    /// Bytes of request body sent.
    public var requestBodyBytes: Int64
    /// Bytes of response headers received.
    public var responseHeaderBytes: Int64
    /// Bytes of response body received, as they came over the connection: before content decoding (a gzip
    /// body counts its compressed bytes; the data a data task hands over may be larger).
    public var responseBodyBytes: Int64
    /// How many redirects Herald followed for the task before this transfer (each hop's metrics are in
    /// ``SessionTask/hopMetrics``).
    public var redirectCount: Int
    /// Whether the transfer ran on a connection that already existed.
    public var connectionReused: Bool
    /// The remote IP address, when a connection was made.
    public var remoteAddress: String?
    /// The remote port, when a connection was made.
    public var remotePort: Int?
    /// The local port, when a connection was made.
    public var localPort: Int?
    /// The protocol version used, such as `"HTTP/1.1"`.
    public var httpVersion: String?
    /// How long the transfer waited for a connection: from when Herald handed it to libcurl until libcurl
    /// began to connect or took a pooled connection — the wait for the event loop to pick it up and for a
    /// connection under ``SessionConfiguration/maximumConnectionsPerHost`` and the total limit. Not part of
    /// the other durations, which count from the end of that wait. `nil` when no response byte arrived: with
    /// libcurl before 8.6 the wait is measured from the first response byte (libcurl's time to it, taken from
    /// the loop's), so a transfer that ended before one has none.
    public var timeInQueue: TimeInterval?
    /// The number of the connection that carried the transfer, unique within its session: transfers with the
    /// same number shared one connection, one after another or, over HTTP/2, at once. The same number as in
    /// ``ConnectionStateChange/connectionIdentifier``. `nil` when the transfer never had a connection (it
    /// failed to connect, or was cancelled before).
    public var connectionIdentifier: Int?

    /// Creates metrics; Herald reads them from curl itself, the initializer is public so observers can be
    /// unit-tested.
    public init(
        startDate: Date,
        nameLookup: TimeInterval,
        connect: TimeInterval,
        tlsHandshake: TimeInterval,
        timeToFirstByte: TimeInterval,
        total: TimeInterval,
        redirectTime: TimeInterval,
        requestHeaderBytes: Int64,
        requestBodyBytes: Int64,
        responseHeaderBytes: Int64,
        responseBodyBytes: Int64,
        redirectCount: Int,
        connectionReused: Bool,
        remoteAddress: String?,
        remotePort: Int?,
        localPort: Int?,
        httpVersion: String?,
        timeInQueue: TimeInterval? = nil,
        connectionIdentifier: Int? = nil
    ) {
        self.startDate = startDate
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.timeToFirstByte = timeToFirstByte
        self.total = total
        self.redirectTime = redirectTime
        self.requestHeaderBytes = requestHeaderBytes
        self.requestBodyBytes = requestBodyBytes
        self.responseHeaderBytes = responseHeaderBytes
        self.responseBodyBytes = responseBodyBytes
        self.redirectCount = redirectCount
        self.connectionReused = connectionReused
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.localPort = localPort
        self.httpVersion = httpVersion
        self.timeInQueue = timeInQueue
        self.connectionIdentifier = connectionIdentifier
    }

    /// Bytes sent in all: request headers and body.
    public var bytesSent: Int64 { requestHeaderBytes + requestBodyBytes }
    /// Bytes received in all: response headers and body.
    public var bytesReceived: Int64 { responseHeaderBytes + responseBodyBytes }
}
