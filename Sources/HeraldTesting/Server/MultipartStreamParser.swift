import Foundation

/// A streaming `multipart/form-data` parser (RFC 2046 §5.1.1) for bodies of any size: it reports each
/// part's header fields, then its body in stretches that point into the bytes just consumed (nothing is
/// copied or kept), then the part's end.
///
/// Built for speed in debug builds, where the test server runs: the body is scanned with `memchr` for CR,
/// and only a CR that starts `CRLF--boundary` ends a part, so a 256 MiB part costs a few `memchr` calls per
/// chunk. A delimiter split across two chunks is held back (at most its own length) until the next one.
/// The tests check it against multipart-kit's parser on random bodies and random chunkings.
///
/// Not thread-safe: one connection's event loop feeds it.
final class MultipartStreamParser {
    /// A malformed body.
    struct SyntaxError: Error, CustomStringConvertible {
        var description: String
    }

    private enum State {
        /// Scanning for a delimiter; `inPart` tells a part's body from the preamble (which is dropped).
        case body(inPart: Bool)
        /// Just after a delimiter: `--` closes, optional padding then CRLF opens the next part.
        case afterDelimiter(inPart: Bool, sawHyphen: Bool, sawCR: Bool)
        /// Reading a part's header lines.
        case headers
        /// After the close delimiter: everything is ignored.
        case epilogue
    }

    /// The largest header section of one part.
    static let maximumHeaderSize = 16 * 1024

    var onHeader: (_ name: String, _ value: String) -> Void = { _, _ in }
    var onBody: (_ bytes: UnsafeRawBufferPointer) -> Void = { _ in }
    var onPartComplete: () -> Void = {}

    private let delimiter: [UInt8]
    private var state = State.body(inPart: false)
    /// Bytes held back from the previous chunk: a possible delimiter cut by the chunk's end.
    private var carry: [UInt8]
    private var line: [UInt8] = []
    private var headerBytes = 0

    /// - Parameter boundary: The boundary from the `Content-Type`, without the leading `--`.
    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter may open the body without a CRLF before it: pretend there was one.
        carry = [0x0D, 0x0A]
    }

    /// Whether the close delimiter has been read.
    var isComplete: Bool {
        if case .epilogue = state { return true }
        return false
    }

    /// Parses the next bytes of the body.
    /// - Throws: ``SyntaxError`` for a malformed body.
    func consume(_ bytes: UnsafeRawBufferPointer) throws {
        guard !carry.isEmpty else { return try process(bytes) }
        let held = carry
        carry = []
        let combined = [UInt8](unsafeUninitializedCapacity: held.count + bytes.count) { buffer, count in
            held.withUnsafeBytes { _ = memcpy(buffer.baseAddress!, $0.baseAddress!, held.count) }
            if let source = bytes.baseAddress, bytes.count > 0 {
                memcpy(buffer.baseAddress! + held.count, source, bytes.count)
            }
            count = held.count + bytes.count
        }
        try combined.withUnsafeBytes { try process($0) }
    }

    private func process(_ bytes: UnsafeRawBufferPointer) throws(SyntaxError) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .body(let inPart):
                index = scanBody(bytes, from: index, inPart: inPart)
            case .afterDelimiter(let inPart, let sawHyphen, let sawCR):
                try readAfterDelimiter(bytes[index], inPart: inPart, sawHyphen: sawHyphen, sawCR: sawCR)
                index += 1
            case .headers:
                index = try readHeaders(bytes, from: index)
            case .epilogue:
                return
            }
        }
    }

    /// Reports body bytes up to the next delimiter (or the chunk's end) and moves past the delimiter.
    private func scanBody(_ bytes: UnsafeRawBufferPointer, from start: Int, inPart: Bool) -> Int {
        guard let base = bytes.baseAddress else { return bytes.count }
        var search = start
        while search < bytes.count {
            guard let found = memchr(base + search, 0x0D, bytes.count - search) else { break }
            let candidate = base.distance(to: UnsafeRawPointer(found))
            let available = min(bytes.count - candidate, delimiter.count)
            let matches = delimiter.withUnsafeBytes { memcmp(base + candidate, $0.baseAddress!, available) == 0 }
            if matches {
                if inPart, candidate > start { onBody(UnsafeRawBufferPointer(rebasing: bytes[start..<candidate])) }
                if available < delimiter.count {
                    // A delimiter may continue in the next chunk: keep its beginning for then.
                    carry = Array(bytes[candidate...])
                    return bytes.count
                }
                state = .afterDelimiter(inPart: inPart, sawHyphen: false, sawCR: false)
                return candidate + delimiter.count
            }
            search = candidate + 1
        }
        if inPart, bytes.count > start { onBody(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
        return bytes.count
    }

    private func readAfterDelimiter(_ byte: UInt8, inPart: Bool, sawHyphen: Bool, sawCR: Bool) throws(SyntaxError) {
        switch (byte, sawHyphen, sawCR) {
        case (UInt8(ascii: "-"), false, false):
            state = .afterDelimiter(inPart: inPart, sawHyphen: true, sawCR: false)
        case (UInt8(ascii: "-"), true, false):
            if inPart { onPartComplete() }
            state = .epilogue
        case (UInt8(ascii: " "), false, false), (UInt8(ascii: "\t"), false, false):
            break  // transport padding
        case (0x0D, false, false):
            state = .afterDelimiter(inPart: inPart, sawHyphen: false, sawCR: true)
        case (0x0A, false, true):
            if inPart { onPartComplete() }
            line = []
            headerBytes = 0
            state = .headers
        default:
            throw SyntaxError(description: "unexpected byte \(byte) after a boundary delimiter")
        }
    }

    /// Reads header lines up to the empty line that ends them.
    private func readHeaders(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(SyntaxError) -> Int {
        guard let base = bytes.baseAddress else { return bytes.count }
        let end = memchr(base + start, 0x0A, bytes.count - start).map { base.distance(to: UnsafeRawPointer($0)) }
        let stop = end ?? bytes.count
        line += bytes[start..<stop]
        headerBytes += stop - start
        guard headerBytes <= Self.maximumHeaderSize else {
            throw SyntaxError(description: "a part's headers exceed \(Self.maximumHeaderSize) bytes")
        }
        guard let end else { return bytes.count }
        guard line.last == 0x0D else { throw SyntaxError(description: "a header line does not end with CRLF") }
        line.removeLast()
        if line.isEmpty {
            state = .body(inPart: true)
        } else {
            try emitHeader(line)
        }
        line = []
        return end + 1
    }

    private func emitHeader(_ line: [UInt8]) throws(SyntaxError) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            line[..<colon].allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw SyntaxError(description: "malformed header line '\(String(decoding: line, as: UTF8.self))'")
        }
        let name = String(decoding: line[..<colon], as: UTF8.self)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        onHeader(name, value)
    }
}
