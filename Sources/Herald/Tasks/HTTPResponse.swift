import Foundation

/// The head of an HTTP response: status, headers, the URL it answered and the protocol version.
public struct HTTPResponse: Sendable, Hashable {
    /// The URL this response answered (after any redirects Herald followed).
    public var url: URL
    /// The status code, such as 200 or 404.
    public var statusCode: Int
    /// The response header fields in the order received.
    public var headers: HTTPHeaders
    /// The protocol version as curl reported it, such as `"HTTP/1.1"` or `"HTTP/2"`.
    public var httpVersion: String

    /// Creates a response head.
    public init(url: URL, statusCode: Int, headers: HTTPHeaders, httpVersion: String = "HTTP/1.1") {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.httpVersion = httpVersion
    }

    /// The media type of `Content-Type` without parameters, lowercased (`"application/json"`), or `nil`.
    public var mimeType: String? {
        guard let contentType = headers["Content-Type"] else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? contentType
        let trimmed = type.trimmingCharacters(in: .whitespaces).lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The `charset` parameter of `Content-Type`, lowercased, or `nil`.
    public var textEncodingName: String? {
        guard let contentType = headers["Content-Type"] else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else {
                continue
            }
            return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"")).lowercased()
        }
        return nil
    }

    /// The declared `Content-Length`, or `nil` when absent or not a number: one or more ASCII digits
    /// (no sign), with spaces and tabs around them allowed, that fits in an `Int64`.
    public var expectedContentLength: Int64? {
        headers["Content-Length"].flatMap(Self.contentLength(from:))
    }

    /// A `Content-Length` value read as ``expectedContentLength`` reads it. Run for every response on the
    /// engine's loop thread: bytes, not Characters.
    static func contentLength(from value: String) -> Int64? {
        var length: Int64 = 0
        var digits = 0
        var trailing = false
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard !trailing else { return nil }
                let (times10, overflow1) = length.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else { return nil }
                length = sum
                digits += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                if digits > 0 { trailing = true }
            default:
                return nil
            }
        }
        return digits > 0 ? length : nil
    }
}
