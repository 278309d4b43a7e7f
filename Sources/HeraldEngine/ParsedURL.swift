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
final class ParsedURL: @unchecked Sendable {
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

    /// One part of `handle`, as libcurl writes it, or `nil` when the URL has none.
    private static func part(_ part: CURLUPart, of handle: OpaquePointer) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, part, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }

    deinit { curl_url_cleanup(handle) }
}
