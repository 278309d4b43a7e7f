/// How many bytes of a streamed response body may wait for their consumer, and how they are handed over.
///
/// The transfer stops reading from the socket when the bytes waiting reach ``highWatermark`` (the server's sends
/// then block once the socket buffers fill), and reads again when the consumer has taken them down to
/// ``lowWatermark``. The read that reaches the mark is kept whole, and the next read is paused and held by
/// libcurl, so about the high watermark plus two of libcurl's reads (up to 1 MiB beyond it) are held. These
/// pauses are the transfer's own: they are not ``SessionTask/suspend()``, post no notification and don't count
/// against the request timeout.
///
/// Over HTTP/2 the socket is shared by every stream on the connection, so a paused stream can't stop its reads:
/// libcurl 7.88 goes on taking the paused stream's data into its own memory up to the stream's flow-control window
/// (32 MiB, libcurl's documentation says), and only then does the server's sending stop. So a stream whose consumer
/// has stopped may hold that much beyond ``highWatermark``; over HTTP/1.1 it holds at most the two reads above. A
/// session whose streamed bodies must stay small forces HTTP/1.1 (``SessionConfiguration/httpVersion``).
public struct StreamBufferPolicy: Sendable, Equatable {
    /// The bytes waiting at which receiving pauses. Default 1 MiB.
    public var highWatermark: Int
    /// The bytes waiting at or below which a paused transfer receives again. Default 256 KiB.
    public var lowWatermark: Int
    /// The largest element the sequence yields: bytes that arrived while the consumer was busy are joined
    /// up to this size. Default 64 KiB.
    public var maximumChunkSize: Int

    /// The defaults: pause at 1 MiB waiting, continue at 256 KiB, elements of at most 64 KiB.
    public static let `default` = StreamBufferPolicy()

    /// Creates a policy; ``SessionManager/bytes(for:bufferPolicy:)`` checks it before anything is sent.
    /// - Parameters:
    ///   - highWatermark: The bytes waiting at which receiving pauses; at least 1.
    ///   - lowWatermark: The bytes waiting at or below which receiving continues; from 0 to `highWatermark`.
    ///   - maximumChunkSize: The largest element yielded; at least 1.
    public init(highWatermark: Int = 1 << 20, lowWatermark: Int = 256 << 10, maximumChunkSize: Int = 64 << 10) {
        self.highWatermark = highWatermark
        self.lowWatermark = lowWatermark
        self.maximumChunkSize = maximumChunkSize
    }

    /// Throws ``HeraldError/Code/invalidRequest`` for watermarks that can't work.
    func validate() throws(HeraldError) {
        guard highWatermark >= 1, maximumChunkSize >= 1, lowWatermark >= 0, lowWatermark <= highWatermark else {
            throw HeraldError(
                .invalidRequest,
                "A stream buffer policy needs highWatermark >= 1, 0 <= lowWatermark <= highWatermark and "
                    + "maximumChunkSize >= 1 (got \(highWatermark), \(lowWatermark), \(maximumChunkSize)).")
        }
    }
}
