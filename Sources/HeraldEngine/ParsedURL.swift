import CCurl
import Foundation

/// A request's URL parsed by libcurl's own URL parser (`CURLU`), for `CURLOPT_CURLU`.
///
/// Given only `CURLOPT_URL`, libcurl parses the URL when the transfer starts, on the engine's loop thread, and
/// formats it back into a string and into its parts: about 11,000 instructions per request, a tenth of the loop
/// thread's work for a small GET, on the thread that bounds how many requests a session runs at once. Parsed
/// here, on the thread that prepares the transfer, the loop thread only copies the parts. The transfer sets
/// `CURLOPT_URL` too, after `CURLOPT_CURLU` and with the same text, which libcurl keeps as the transfer's URL
/// without formatting the parsed one again. (libcurl 8.12 and later forget `CURLOPT_URL` when
/// `CURLOPT_CURLU` is set, so the order matters.) The URL as libcurl writes it back, with an empty path
/// written as `/` and dot segments removed, is what it used to report as the effective URL, and the
/// response's URL still is (``effectiveURL``).
///
/// libcurl reads the handle only while a transfer it was set for runs, and never changes or frees it: each
/// transfer holds the one it sets (the session's transfers of one URL may share it, see
/// ``EasyHandlePool/parsedURL(for:)``), and every transfer sets the option afresh (to its own, or to none)
/// before it starts on a handle from the pool.
package final class ParsedURL: @unchecked Sendable {
    // Safety: both properties are set once, in `init`; libcurl only reads the handle (it copies the parts
    // when a transfer starts), so transfers on any thread may share one.

    /// The parsed URL, owned here.
    let handle: OpaquePointer
    /// The text it was parsed from.
    let text: String
    /// The URL as libcurl writes it back (`CURLUPART_URL`) when that differs from `text`, such as
    /// `http://host/` for `http://host`; `nil` when it is `text`.
    let effectiveURL: URL?
    /// Whether the URL has a user name or password in it (`http://user:secret@host/`).
    let namesCredential: Bool
    /// Whether the URL has a query (`?…`).
    let hasQuery: Bool

    /// Parses `text` as libcurl parses `CURLOPT_URL` (a scheme guessed when missing, schemes it doesn't
    /// support accepted, so that the protocol check reports them); `nil` when libcurl refuses it, and then
    /// libcurl parses `CURLOPT_URL` itself and fails the transfer with its own error, as without this.
    init?(_ text: String) {
        guard let handle = curl_url() else { return nil }
        let flags = UInt32(CURLU_GUESS_SCHEME) | UInt32(CURLU_NON_SUPPORT_SCHEME)
        guard curl_url_set(handle, CURLUPART_URL, text, flags) == CURLUE_OK else {
            curl_url_cleanup(handle)
            return nil
        }
        self.handle = handle
        self.text = text
        let written = Self.part(CURLUPART_URL, of: handle)
        effectiveURL = written.flatMap { $0 == text ? nil : URL(string: $0) }
        namesCredential =
            Self.part(CURLUPART_USER, of: handle) != nil || Self.part(CURLUPART_PASSWORD, of: handle) != nil
        hasQuery = Self.part(CURLUPART_QUERY, of: handle) != nil
    }

    /// `url` as libcurl sends it: the host and path of a request are libcurl's rewrite of what was written, which
    /// differs for an IPv4 address in another form (`127.1`, `0x7f.0.0.1`, `127.000.000.001` are `127.0.0.1`), an
    /// IPv6 address (`[0000::1]` is `[::1]`), and a path with dot segments (`/a/../b` is `/b`). What depends on
    /// where a request really goes (which cookies it carries) must see the same URL as the response reports.
    ///
    /// Parsing costs about 11,000 instructions, so only a URL that may be rewritten is parsed: one whose host is
    /// made of hexadecimal digits, `x` and dots without being a dotted quad already, or holds a `:`, or whose path
    /// has a segment starting with a dot. Any other URL is returned as it is.
    package static func asSent(_ url: URL) -> URL {
        guard mayBeRewritten(url) else { return url }
        return ParsedURL(url.absoluteString).map { $0.effectiveURL ?? url } ?? url
    }

    /// A scan of the URL's bytes, with no allocation: the cookie store asks it for every request once it holds a
    /// cookie.
    private static func mayBeRewritten(_ url: URL) -> Bool {
        var text = url.absoluteString
        return text.withUTF8 { mayBeRewritten(bytes: $0) }
    }

    private static func mayBeRewritten(bytes text: UnsafeBufferPointer<UInt8>) -> Bool {
        let slash: UInt8 = 47, colon: UInt8 = 58, question: UInt8 = 63, hash: UInt8 = 35, dot: UInt8 = 46
        var index = 0
        while index + 2 < text.count, !(text[index] == colon && text[index + 1] == slash && text[index + 2] == slash) {
            index += 1
        }
        guard index + 2 < text.count else { return false }
        let authorityStart = index + 3
        var authorityEnd = authorityStart
        var hostStart = authorityStart
        while authorityEnd < text.count, text[authorityEnd] != slash, text[authorityEnd] != question,
            text[authorityEnd] != hash
        {
            if text[authorityEnd] == 64 { hostStart = authorityEnd + 1 }  // "@": the user information ends
            authorityEnd += 1
        }
        // The path, up to its query or fragment: a segment starting with a dot (`/./`, `/../`, `/.`).
        var pathIndex = authorityEnd
        while pathIndex + 1 < text.count, text[pathIndex] != question, text[pathIndex] != hash {
            if text[pathIndex] == slash, text[pathIndex + 1] == dot { return true }
            pathIndex += 1
        }
        guard hostStart < authorityEnd else { return false }
        if text[hostStart] == 91 { return true }  // "[": an IPv6 address, which libcurl writes in its short form
        var hostEnd = hostStart
        while hostEnd < authorityEnd, text[hostEnd] != colon { hostEnd += 1 }  // ":" starts the port
        // A dotted quad already (four decimal parts of 0...255, no leading zero) is written as it is; any other
        // host of hexadecimal digits, `x` and dots may be an IPv4 address in another form.
        var parts = 0
        var digits = 0
        var value = 0
        var isDottedQuad = true
        var mayBeNumeric = true
        for position in hostStart..<hostEnd {
            let byte = text[position]
            switch byte {
            case 48...57:
                if digits == 1, value == 0 { isDottedQuad = false }  // a leading zero
                digits += 1
                // A part of four digits or more is no dotted quad's: its value no longer matters (and a server's
                // redirect to a host of twenty digits would overflow it).
                if digits <= 3 { value = value * 10 + Int(byte - 48) }
                if digits > 3 || value > 255 { isDottedQuad = false }
            case dot:
                if digits == 0 { isDottedQuad = false }
                parts += 1
                digits = 0
                value = 0
            case 97...102, 65...70, 120, 88:  // a-f, A-F, x, X
                isDottedQuad = false
            default:
                mayBeNumeric = false
            }
            if !mayBeNumeric { return false }
        }
        if digits == 0 { isDottedQuad = false }
        return !(isDottedQuad && parts == 3)
    }

    /// One part of `handle`, as libcurl writes it, or `nil` when the URL has none.
    private static func part(_ part: CURLUPart, of handle: OpaquePointer) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, part, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }

    deinit { curl_url_cleanup(handle) }
}
