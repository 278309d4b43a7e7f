import NIOCore

/// The deterministic content of `/bytes/{n}` responses: byte `i` of the representation is `UInt8(i % 251)`.
///
/// 251 is prime, so the pattern does not line up with any power-of-two buffer size and a byte delivered at the
/// wrong offset is caught by comparing against ``TestServer/expectedBytes(in:)``.
enum BytePattern {
    static let period = 251

    /// One buffer holding the pattern from offset 0 for at least `maximumChunkSize + period` bytes.
    ///
    /// Every chunk the server writes is a slice of this buffer, so streaming any amount of data allocates no body
    /// storage at all.
    static let buffer: ByteBuffer = {
        let length = (ByteStreamOptions.maximumChunkSize / period + 2) * period
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        buffer.writeBytes((0..<length).lazy.map { UInt8($0 % period) })
        return buffer
    }()

    /// The pattern bytes for representation offsets `offset ..< offset + length`, as a slice of ``buffer``.
    ///
    /// - Precondition: `length <= ByteStreamOptions.maximumChunkSize`; callers clamp to the chunk size.
    static func slice(at offset: Int, length: Int) -> ByteBuffer {
        // Safe to force: the buffer spans maximumChunkSize + period bytes and offset % period < period.
        buffer.getSlice(at: offset % period, length: length)!
    }

    /// The pattern byte at representation offset `offset`.
    static func byte(at offset: Int) -> UInt8 {
        UInt8(offset % period)
    }
}
