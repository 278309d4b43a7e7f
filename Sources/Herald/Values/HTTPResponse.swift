import Foundation
import HeraldEngine

/// The head of an HTTP response: status, headers, the URL it answered and the protocol version.
public struct HTTPResponse: Sendable, Hashable {
    /// The URL this response answered (after any redirects Herald followed).
    public var url: URL {
        get { storage.url }
        set { uniqueStorage().url = newValue }
    }
    /// The status code, such as 200 or 404.
    public var statusCode: Int {
        get { storage.statusCode }
        set { uniqueStorage().statusCode = newValue }
    }
    /// The response header fields in the order received.
    public var headers: HTTPHeaders {
        get { storage.headers }
        set { uniqueStorage().headers = newValue }
    }
    /// The protocol version as curl reported it, such as `"HTTP/1.1"` or `"HTTP/2"`.
    public var httpVersion: String {
        get { storage.httpVersion }
        set { uniqueStorage().httpVersion = newValue }
    }

    /// The values, in one object shared by copies until one of them changes a value (copy on write). A
    /// response is copied several times between the engine's loop thread, the task and its completion
    /// handler. Held inline, the `URL` (whose layout Foundation keeps to itself) made every copy go through
    /// the runtime's generic copy, with a reference count to update for each of its fields; a reference is
    /// one.
    private var storage: Storage

    private final class Storage: @unchecked Sendable {
        // Safety: changed only through `uniqueStorage()`, by the one value that holds it.
        var url: URL
        var statusCode: Int
        var headers: HTTPHeaders
        var httpVersion: String

        init(url: URL, statusCode: Int, headers: HTTPHeaders, httpVersion: String) {
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
            self.httpVersion = httpVersion
        }
    }

    /// The storage, copied first if another value shares it.
    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) {
            storage = Storage(
                url: storage.url, statusCode: storage.statusCode, headers: storage.headers,
                httpVersion: storage.httpVersion)
        }
        return storage
    }

    /// Creates a response head.
    public init(url: URL, statusCode: Int, headers: HTTPHeaders, httpVersion: String = "HTTP/1.1") {
        storage = Storage(url: url, statusCode: statusCode, headers: headers, httpVersion: httpVersion)
    }

    /// Whether the two have the same URL, status code, headers and version.
    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.statusCode == rhs.statusCode && lhs.url == rhs.url && lhs.headers == rhs.headers
                && lhs.httpVersion == rhs.httpVersion)
    }

    /// Hashes the URL, status code, headers and version.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(statusCode)
        hasher.combine(headers)
        hasher.combine(httpVersion)
    }

    /// The media type of `Content-Type` without parameters, lowercased (`"application/json"`), or `nil`.
    public var mimeType: String? {
        guard let contentType = headers["Content-Type"] else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? contentType
        let trimmed = type.trimmingCharacters(in: .whitespaces).lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Whether a body collected in memory (a data task's, ``SessionManager/data(for:)``'s, a cached one)
    /// comes decoded: the response's `Content-Encoding` names a coding other than `identity`, and Herald
    /// undoes every coding it names (`deflate`, `gzip`, `br` and `zstd` with the usual libcurl build).
    ///
    /// `false` when it names none, or one Herald can't undo: the body then comes as the server sent it, and
    /// `Content-Encoding` says what is left to undo. A download's file and a streamed body are never decoded,
    /// whatever this says; the file of a data task that became a download is, as its body in memory would have
    /// been.
    public var bodyIsDecodedInMemory: Bool {
        let codings = CurlFeatures.codings(in: headers.values(for: "Content-Encoding"))
        guard codings.contains(where: { $0 != "identity" && $0 != "none" }) else { return false }
        return codings.allSatisfy(CurlFeatures.decodableCodings.contains)
    }

    /// The `charset` parameter of `Content-Type`, lowercased, or `nil`. Parameters are read as RFC 9110 §5.6.6
    /// writes them: a `;` or `charset=` inside another parameter's quoted value is that value's.
    public var textEncodingName: String? {
        guard let contentType = headers["Content-Type"] else { return nil }
        return Self.fieldParameters(contentType).first { $0.0 == "charset" }?.1.trimmingCharacters(in: .whitespaces)
            .lowercased()
    }

    /// The declared `Content-Length`, or `nil` when absent or not a number: one or more ASCII digits
    /// (no sign), with spaces and tabs around them allowed, that fits in an `Int64`.
    public var expectedContentLength: Int64? {
        headers["Content-Length"].flatMap(ResponseHead.contentLength(from:))
    }
}

extension HTTPResponse {
    /// A status line's version as OpenTelemetry's `network.protocol.version` writes it (`HTTP/1.1` → `1.1`,
    /// `HTTP/2` → `2`); `nil` for a version it has no value for. Compared whole: cheap for short strings. For the
    /// connection payloads here and for the observers, one mapping.
    package static func protocolVersionAttribute(_ httpVersion: String) -> String? {
        switch httpVersion {
        case "HTTP/1.1": "1.1"
        case "HTTP/2", "HTTP/2.0": "2"
        case "HTTP/1.0": "1.0"
        case "HTTP/3", "HTTP/3.0": "3"
        default: nil
        }
    }
}

extension HTTPResponse {
    /// This response with any user name and password in its URL replaced by `***`: what a notification's
    /// payload carries, for observers that log it as it is.
    func redactingCredentials() -> HTTPResponse {
        let redacted = url.redactingCredentials()
        guard redacted != url else { return self }
        var response = self
        response.url = redacted
        return response
    }
}
