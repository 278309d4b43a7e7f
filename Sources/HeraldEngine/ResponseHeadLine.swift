import Glibc

/// One line of a response head as curl hands it to the header callback, parsed straight from the bytes.
///
/// Pure and Foundation-free: the header callback runs for every line of every response, and the fuzz target
/// (`Fuzz/`, `make fuzz`) drives this function with arbitrary bytes. Whatever a server sends — no colon, bytes
/// that are not UTF-8, a status code of twenty digits — it returns a value and never traps. Bytes that are not
/// valid UTF-8 are decoded lossily (each bad sequence becomes U+FFFD), so a value is never dropped.
package enum ResponseHeadLine: Equatable {
    /// `HTTP/1.1 200 OK`: a new response head starts (an interim 1xx, a 401 curl answers for Digest, or the final
    /// one). `statusCode` is 0 when the code is not one to three ASCII digits (the reason phrase may follow them
    /// without a space, as libcurl allows).
    case statusLine(version: String, statusCode: Int)
    /// `Name: value`, each trimmed of spaces and tabs.
    case field(name: String, value: String)
    /// An obsolete line folding (`obs-fold`, a line starting with a space or tab): more of the previous
    /// field's value, trimmed.
    case continuation(String)
    /// The blank line that ends a head, or a line without a colon: nothing to record.
    case ignored

    /// Parses one line; with `recentValues`, the value of a common field that repeats the last one received
    /// (byte for byte) is that string again rather than a new one.
    package static func parse(_ raw: UnsafeRawBufferPointer, recentValues: RecentFieldValues? = nil) -> ResponseHeadLine
    {
        // Plain index arithmetic over the bytes: this runs for every header line of every response.
        var end = raw.count
        while end > 0, raw[end - 1] == 0x0D || raw[end - 1] == 0x0A { end -= 1 }
        guard end > 0 else { return .ignored }
        if end >= 5, startsStatusLine(raw) {
            var versionEnd = 0
            while versionEnd < end, raw[versionEnd] != 0x20 { versionEnd += 1 }
            var codeStart = versionEnd
            while codeStart < end, raw[codeStart] == 0x20 || raw[codeStart] == 0x09 { codeStart += 1 }
            // The digits end the code, whatever follows them: libcurl takes `200OK` and `200\tOK` for 200 too.
            var codeEnd = codeStart
            while codeEnd < end, raw[codeEnd] >= 0x30, raw[codeEnd] <= 0x39 { codeEnd += 1 }
            return .statusLine(
                version: common(raw, 0, versionEnd)?.text ?? text(raw, 0, versionEnd),
                statusCode: statusCode(raw, from: codeStart, to: codeEnd))
        }
        let first = raw[0]
        if first == 0x20 || first == 0x09 {
            return .continuation(trimmedText(raw, 0, end))
        }
        var colon = 0
        while colon < end, raw[colon] != 0x3A { colon += 1 }
        guard colon < end else { return .ignored }
        let (nameStart, nameEnd) = trimmed(raw, 0, colon)
        let (valueStart, valueEnd) = trimmed(raw, colon + 1, end)
        guard let name = common(raw, nameStart, nameEnd) else {
            return .field(name: text(raw, nameStart, nameEnd), value: text(raw, valueStart, valueEnd))
        }
        let value =
            recentValues?.value(of: name, raw, valueStart, valueEnd) ?? text(raw, valueStart, valueEnd)
        return .field(name: name.text, value: value)
    }

    /// Whether the line starts a response head (`HTTP/`).
    package static func startsStatusLine(_ raw: UnsafeRawBufferPointer) -> Bool {
        raw.count >= 5 && raw[0] == 0x48 && raw[1] == 0x54 && raw[2] == 0x54 && raw[3] == 0x50 && raw[4] == 0x2F
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

    /// The common text (``CommonText``) with exactly the bytes `start..<end`, if there is one.
    static func common(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> CommonText? {
        guard end > start, let base = raw.baseAddress else { return nil }
        let bytes = base + start
        let count = end - start
        func spelled(_ candidate: CommonText) -> CommonText? {
            let spelling = candidate.spelling
            return spelling.utf8CodeUnitCount == count && memcmp(bytes, spelling.utf8Start, count) == 0
                ? candidate : nil
        }
        // By length, then by first byte: at most two comparisons of the bytes.
        switch (count, bytes.load(as: UInt8.self)) {
        case (4, UInt8(ascii: "D")): return spelled(.date)
        case (4, UInt8(ascii: "E")): return spelled(.eTag)
        case (4, UInt8(ascii: "V")): return spelled(.vary)
        case (4, UInt8(ascii: "d")): return spelled(.lowercaseDate)
        case (6, UInt8(ascii: "H")): return spelled(.http2)
        case (6, UInt8(ascii: "S")): return spelled(.server)
        case (6, UInt8(ascii: "s")): return spelled(.lowercaseServer)
        case (7, UInt8(ascii: "E")): return spelled(.expires)
        case (8, UInt8(ascii: "H")): return spelled(.http11) ?? spelled(.http10)
        case (8, UInt8(ascii: "L")): return spelled(.location)
        case (10, UInt8(ascii: "C")): return spelled(.connection)
        case (10, UInt8(ascii: "K")): return spelled(.keepAlive)
        case (10, UInt8(ascii: "S")): return spelled(.setCookie)
        case (12, UInt8(ascii: "C")): return spelled(.contentType)
        case (12, UInt8(ascii: "c")): return spelled(.lowercaseContentType)
        case (13, UInt8(ascii: "A")): return spelled(.acceptRanges)
        case (13, UInt8(ascii: "C")): return spelled(.cacheControl) ?? spelled(.contentRange)
        case (13, UInt8(ascii: "L")): return spelled(.lastModified)
        case (14, UInt8(ascii: "C")): return spelled(.contentLength)
        case (14, UInt8(ascii: "c")): return spelled(.lowercaseContentLength)
        case (16, UInt8(ascii: "C")): return spelled(.contentEncoding)
        case (17, UInt8(ascii: "T")): return spelled(.transferEncoding)
        default: return nil
        }
    }

    /// The bytes `start..<end` without the spaces and tabs around them, decoded.
    private static func trimmedText(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        let (start, end) = trimmed(raw, start, end)
        return text(raw, start, end)
    }

    /// The range `start..<end` without the spaces and tabs at its ends.
    private static func trimmed(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start
        var end = end
        while start < end, raw[start] == 0x20 || raw[start] == 0x09 { start += 1 }
        while end > start, raw[end - 1] == 0x20 || raw[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }

    /// The bytes `start..<end`, decoded as UTF-8 (lossily).
    static func text(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self)
    }
}

/// The field names most responses carry and the versions of status lines, spelled as servers send them.
/// Bytes that spell one exactly become its string, made once, not a new string made from the bytes: about a
/// hundred instructions each, eight or so times per response.
enum CommonText: Int, CaseIterable {
    case date
    case eTag
    case vary
    case lowercaseDate
    case http2
    case server
    case lowercaseServer
    case expires
    case http11
    case http10
    case location
    case connection
    case keepAlive
    case setCookie
    case contentType
    case lowercaseContentType
    case acceptRanges
    case cacheControl
    case contentRange
    case lastModified
    case contentLength
    case lowercaseContentLength
    case contentEncoding
    case transferEncoding

    /// How the text is spelled, compared with the bytes in place.
    var spelling: StaticString {
        switch self {
        case .date: "Date"
        case .eTag: "ETag"
        case .vary: "Vary"
        case .lowercaseDate: "date"
        case .http2: "HTTP/2"
        case .server: "Server"
        case .lowercaseServer: "server"
        case .expires: "Expires"
        case .http11: "HTTP/1.1"
        case .http10: "HTTP/1.0"
        case .location: "Location"
        case .connection: "Connection"
        case .keepAlive: "Keep-Alive"
        case .setCookie: "Set-Cookie"
        case .contentType: "Content-Type"
        case .lowercaseContentType: "content-type"
        case .acceptRanges: "Accept-Ranges"
        case .cacheControl: "Cache-Control"
        case .contentRange: "Content-Range"
        case .lastModified: "Last-Modified"
        case .contentLength: "Content-Length"
        case .lowercaseContentLength: "content-length"
        case .contentEncoding: "Content-Encoding"
        case .transferEncoding: "Transfer-Encoding"
        }
    }

    /// The text as a string, made once (a string of at most 15 bytes, as all but two of these are, is
    /// stored inline and has no reference count to touch).
    var text: String { Self.texts[rawValue] }

    private static let texts = ContiguousArray(allCases.map { $0.spelling.description })

    /// Whether the field's last value is kept for the next response that repeats it
    /// (``RecentFieldValues``): not `Set-Cookie`, whose values are credentials, nor `Location`, whose
    /// URLs may carry tokens; nor the status-line versions, which are no field.
    var keepsRecentValue: Bool {
        switch self {
        case .setCookie, .location, .http2, .http11, .http10: false
        default: true
        }
    }
}
