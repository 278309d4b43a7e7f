/// One line of a response head as curl hands it to the header callback, parsed straight from the bytes.
///
/// Pure and Foundation-free: the header callback runs for every line of every response, and the fuzz target
/// (`Fuzz/`, `make fuzz`) drives this function with arbitrary bytes. Whatever a server sends — no colon, bytes
/// that are not UTF-8, a status code of twenty digits — it returns a value and never traps. Bytes that are not
/// valid UTF-8 are decoded lossily (each bad sequence becomes U+FFFD), so a value is never dropped.
enum ResponseHeadLine: Equatable {
    /// `HTTP/1.1 200 OK`: a new response head starts (an interim 1xx, a 401 curl answers for Digest, or the final
    /// one). `statusCode` is 0 when the code is not one to three ASCII digits.
    case statusLine(version: String, statusCode: Int)
    /// `Name: value`, each trimmed of spaces and tabs.
    case field(name: String, value: String)
    /// An obsolete line folding (`obs-fold`, a line starting with a space or tab): more of the previous
    /// field's value, trimmed.
    case continuation(String)
    /// The blank line that ends a head, or a line without a colon: nothing to record.
    case ignored

    static func parse(_ raw: UnsafeRawBufferPointer) -> ResponseHeadLine {
        var line = raw[...]
        while let last = line.last, last == 0x0D || last == 0x0A { line = line.dropLast() }
        if line.starts(with: httpPrefix) {
            let parts = line.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: true)
            let version = parts.first.map { String(decoding: $0, as: UTF8.self) } ?? "HTTP/1.1"
            return .statusLine(version: version, statusCode: parts.count > 1 ? statusCode(parts[1]) : 0)
        }
        guard let first = line.first else { return .ignored }
        if first == 0x20 || first == 0x09 {
            return .continuation(String(decoding: trimmed(line), as: UTF8.self))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .ignored }
        let name = String(decoding: trimmed(line[..<colon]), as: UTF8.self)
        let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
        return .field(name: name, value: value)
    }

    private static let httpPrefix: [UInt8] = Array("HTTP/".utf8)

    /// One to three ASCII digits, else 0: no sign, no overflow, no `Int(String)` allocation.
    private static func statusCode(_ bytes: Slice<UnsafeRawBufferPointer>) -> Int {
        guard (1...3).contains(bytes.count) else { return 0 }
        var code = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return 0 }
            code = code * 10 + Int(byte - 0x30)
        }
        return code
    }

    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var bytes = bytes
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        return bytes
    }
}
