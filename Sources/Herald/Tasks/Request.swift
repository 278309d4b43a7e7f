import Foundation

/// An HTTP request: URL, method, header fields and an optional in-memory body.
///
/// Validated when a task is created (``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``):
/// a URL without a host, a scheme the session does not allow, a method that is not an HTTP token, or a
/// header name or value containing CR, LF or NUL is refused with a ``HeraldError`` before any byte is sent.
public struct Request: Sendable, Hashable {
    /// The URL to request.
    public var url: URL
    /// The HTTP method, such as `"GET"` or `"POST"`; case-sensitive, as HTTP methods are.
    public var method: String
    /// The header fields, sent in order after the session's additional headers that they don't override.
    public var headers: HTTPHeaders
    /// The body sent with the request, if any. Its length is sent as `Content-Length`.
    public var body: Data?
    /// The idle timeout for this request in seconds, overriding the session's
    /// ``SessionConfiguration/timeoutIntervalForRequest`` when set.
    public var timeoutInterval: TimeInterval?

    /// Creates a request.
    /// - Parameters:
    ///   - url: The URL to request.
    ///   - method: The HTTP method; default `"GET"`.
    ///   - headers: Header fields; default none.
    ///   - body: An in-memory body; default none.
    ///   - timeoutInterval: An idle timeout overriding the session's; default none.
    public init(
        url: URL, method: String = "GET", headers: HTTPHeaders = [:], body: Data? = nil,
        timeoutInterval: TimeInterval? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutInterval = timeoutInterval
    }
}

extension Request {
    /// Checks what a server must never receive malformed: the URL, the method and every header field.
    func validate(allowedProtocols: Set<String>) throws(HeraldError) {
        guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else {
            throw HeraldError(.badURL, "The URL has no scheme.", url: url)
        }
        guard allowedProtocols.contains(scheme) else {
            throw HeraldError(.unsupportedURL, "The URL scheme '\(scheme)' is not allowed by this session.", url: url)
        }
        guard let host = url.host, !host.isEmpty else {
            throw HeraldError(.badURL, "The URL has no host.", url: url)
        }
        guard !url.absoluteString.utf8.contains(where: Self.isLineBreakOrNUL) else {
            throw HeraldError(.badURL, "The URL contains CR, LF or NUL.", url: url)
        }
        guard !method.isEmpty, method.utf8.allSatisfy(Self.isTokenCharacter) else {
            throw HeraldError(.invalidRequest, "The method '\(method)' is not an HTTP token.", url: url)
        }
        for field in headers {
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(Self.isTokenCharacter) else {
                throw HeraldError(.invalidRequest, "The header name '\(field.name)' is not an HTTP token.", url: url)
            }
            guard !field.value.utf8.contains(where: Self.isLineBreakOrNUL) else {
                throw HeraldError(
                    .invalidRequest, "The value of header '\(field.name)' contains CR, LF or NUL.", url: url)
            }
        }
    }

    private static func isLineBreakOrNUL(_ byte: UInt8) -> Bool {
        byte == 0x0D || byte == 0x0A || byte == 0x00
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
