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

    /// The largest pattern ``gzipEncoding(count:)`` encodes: bodies built whole in memory stay small.
    static let maximumGzipCount = 16 << 20

    /// The first `count` pattern bytes as a gzip member (RFC 1952) whose deflate data is stored blocks (RFC 1951
    /// §3.2.4, no compression): a valid encoding any decoder takes, built without a compressor, and one whose
    /// decoded bytes come out as its stored bytes arrive, so a body cut short decodes to a known prefix.
    static func gzipEncoding(count: Int) -> [UInt8] {
        let blockSize = 0xFFFF
        var bytes: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        bytes.reserveCapacity(count + count / blockSize * 5 + 23)
        var crc: UInt32 = 0xFFFF_FFFF
        var offset = 0
        repeat {
            let length = min(blockSize, count - offset)
            let isLast = offset + length == count
            let size = UInt16(length)
            bytes += [isLast ? 1 : 0, UInt8(size & 0xFF), UInt8(size >> 8), UInt8(~size & 0xFF), UInt8(~size >> 8)]
            for index in offset..<(offset + length) {
                let byte = byte(at: index)
                bytes.append(byte)
                crc = crc32Table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
            offset += length
        } while offset < count
        for value in [~crc, UInt32(truncatingIfNeeded: count)] {
            bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
        }
        return bytes
    }

    /// The CRC-32 (ISO 3309, reflected polynomial `0xEDB88320`) of each byte value, for gzip's trailer.
    private static let crc32Table: [UInt32] = (0..<256).map { value in
        var crc = UInt32(value)
        for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }
}
