import Foundation

/// RFC 1321 MD5, for the test server's Digest authentication (RFC 7616 `MD5`). Not for security.
enum MD5 {
    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14,
        20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10,
        15, 21,
    ]
    private static let constants: [UInt32] = (0..<64).map { index in
        UInt32(truncatingIfNeeded: Int64(abs(sin(Double(index + 1))) * 4_294_967_296.0))
    }

    /// The lowercase hex digest of `text`'s UTF-8 bytes.
    static func hex(_ text: String) -> String {
        digest(Array(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    static func digest(_ input: [UInt8]) -> [UInt8] {
        var message = input
        let bitLength = UInt64(input.count) &* 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for index in 0..<8 { message.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index)))) }
        var a0: UInt32 = 0x6745_2301
        var b0: UInt32 = 0xefcd_ab89
        var c0: UInt32 = 0x98ba_dcfe
        var d0: UInt32 = 0x1032_5476
        for chunk in stride(from: 0, to: message.count, by: 64) {
            var words = [UInt32](repeating: 0, count: 16)
            for index in 0..<16 {
                let base = chunk + index * 4
                words[index] =
                    UInt32(message[base]) | UInt32(message[base + 1]) << 8 | UInt32(message[base + 2]) << 16
                    | UInt32(message[base + 3]) << 24
            }
            var (a, b, c, d) = (a0, b0, c0, d0)
            for index in 0..<64 {
                var f: UInt32
                let g: Int
                switch index {
                case 0..<16:
                    f = (b & c) | (~b & d)
                    g = index
                case 16..<32:
                    f = (d & b) | (~d & c)
                    g = (5 * index + 1) % 16
                case 32..<48:
                    f = b ^ c ^ d
                    g = (3 * index + 5) % 16
                default:
                    f = c ^ (b | ~d)
                    g = (7 * index) % 16
                }
                f = f &+ a &+ constants[index] &+ words[g]
                a = d
                d = c
                c = b
                b = b &+ (f << shifts[index] | f >> (32 - shifts[index]))
            }
            a0 = a0 &+ a
            b0 = b0 &+ b
            c0 = c0 &+ c
            d0 = d0 &+ d
        }
        var output: [UInt8] = []
        for word in [a0, b0, c0, d0] {
            for index in 0..<4 { output.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(index)))) }
        }
        return output
    }
}
