import Glibc

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
        // Plain index arithmetic over the bytes: this runs for every header line of every response.
        var end = raw.count
        while end > 0, raw[end - 1] == 0x0D || raw[end - 1] == 0x0A { end -= 1 }
        guard end > 0 else { return .ignored }
        if end >= 5, raw[0] == 0x48, raw[1] == 0x54, raw[2] == 0x54, raw[3] == 0x50, raw[4] == 0x2F {  // "HTTP/"
            var versionEnd = 0
            while versionEnd < end, raw[versionEnd] != 0x20 { versionEnd += 1 }
            var codeStart = versionEnd
            while codeStart < end, raw[codeStart] == 0x20 { codeStart += 1 }
            var codeEnd = codeStart
            while codeEnd < end, raw[codeEnd] != 0x20 { codeEnd += 1 }
            return .statusLine(
                version: common(raw, 0, versionEnd) ?? text(raw, 0, versionEnd),
                statusCode: statusCode(raw, from: codeStart, to: codeEnd))
        }
        let first = raw[0]
        if first == 0x20 || first == 0x09 {
            return .continuation(trimmedText(raw, 0, end))
        }
        var colon = 0
        while colon < end, raw[colon] != 0x3A { colon += 1 }
        guard colon < end else { return .ignored }
        return .field(name: trimmedText(raw, 0, colon, common: true), value: trimmedText(raw, colon + 1, end))
    }

    /// One to three ASCII digits, else 0: no sign, no overflow, no `Int(String)` allocation.
    private static func statusCode(_ raw: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        guard (1...3).contains(end - start) else { return 0 }
        var code = 0
        for index in start..<end {
            let byte = raw[index]
            guard byte >= 0x30, byte <= 0x39 else { return 0 }
            code = code * 10 + Int(byte - 0x30)
        }
        return code
    }

    /// The field names most responses carry and the versions of status lines, spelled as servers send them:
    /// bytes that spell one of them exactly are that string literal, not a new string made from the bytes
    /// (about a hundred instructions each, eight or so times per response). `nil` for any other bytes.
    private static func common(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String? {
        guard end > start, let base = raw.baseAddress else { return nil }
        let bytes = base + start
        let count = end - start
        func spelled(_ text: StaticString) -> Bool {
            text.utf8CodeUnitCount == count && memcmp(bytes, text.utf8Start, count) == 0
        }
        // By length, then by first byte: at most two comparisons of the bytes.
        switch (count, bytes.load(as: UInt8.self)) {
        case (4, UInt8(ascii: "D")): return spelled("Date") ? "Date" : nil
        case (4, UInt8(ascii: "E")): return spelled("ETag") ? "ETag" : nil
        case (4, UInt8(ascii: "V")): return spelled("Vary") ? "Vary" : nil
        case (4, UInt8(ascii: "d")): return spelled("date") ? "date" : nil
        case (6, UInt8(ascii: "H")): return spelled("HTTP/2") ? "HTTP/2" : nil
        case (6, UInt8(ascii: "S")): return spelled("Server") ? "Server" : nil
        case (6, UInt8(ascii: "s")): return spelled("server") ? "server" : nil
        case (7, UInt8(ascii: "E")): return spelled("Expires") ? "Expires" : nil
        case (8, UInt8(ascii: "H")):
            if spelled("HTTP/1.1") { return "HTTP/1.1" }
            return spelled("HTTP/1.0") ? "HTTP/1.0" : nil
        case (8, UInt8(ascii: "L")): return spelled("Location") ? "Location" : nil
        case (10, UInt8(ascii: "C")): return spelled("Connection") ? "Connection" : nil
        case (10, UInt8(ascii: "K")): return spelled("Keep-Alive") ? "Keep-Alive" : nil
        case (10, UInt8(ascii: "S")): return spelled("Set-Cookie") ? "Set-Cookie" : nil
        case (12, UInt8(ascii: "C")): return spelled("Content-Type") ? "Content-Type" : nil
        case (12, UInt8(ascii: "c")): return spelled("content-type") ? "content-type" : nil
        case (13, UInt8(ascii: "A")): return spelled("Accept-Ranges") ? "Accept-Ranges" : nil
        case (13, UInt8(ascii: "C")):
            if spelled("Cache-Control") { return "Cache-Control" }
            return spelled("Content-Range") ? "Content-Range" : nil
        case (13, UInt8(ascii: "L")): return spelled("Last-Modified") ? "Last-Modified" : nil
        case (14, UInt8(ascii: "C")): return spelled("Content-Length") ? "Content-Length" : nil
        case (14, UInt8(ascii: "c")): return spelled("content-length") ? "content-length" : nil
        case (16, UInt8(ascii: "C")): return spelled("Content-Encoding") ? "Content-Encoding" : nil
        case (17, UInt8(ascii: "T")): return spelled("Transfer-Encoding") ? "Transfer-Encoding" : nil
        default: return nil
        }
    }

    /// The bytes `start..<end` without the spaces and tabs around them, decoded.
    /// With `common`, a ``commonTexts`` entry when the bytes are one.
    private static func trimmedText(
        _ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int, common: Bool = false
    ) -> String {
        var start = start
        var end = end
        while start < end, raw[start] == 0x20 || raw[start] == 0x09 { start += 1 }
        while end > start, raw[end - 1] == 0x20 || raw[end - 1] == 0x09 { end -= 1 }
        if common, let known = Self.common(raw, start, end) { return known }
        return text(raw, start, end)
    }

    /// The bytes `start..<end`, decoded as UTF-8 (lossily).
    private static func text(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self)
    }
}
