import Foundation

/// The head of a response as the engine received it: status, header fields, the URL it answered and the
/// protocol version. `Herald` presents it as its public `ResponseHead`.
package struct ResponseHead: Sendable {
    /// The URL the response answered.
    package var url: URL
    /// The status code.
    package var statusCode: Int
    /// The header fields, in the order received.
    package var headers: HeaderFields
    /// The protocol version as it appeared on the status line, such as `"HTTP/1.1"` or `"HTTP/2"`.
    package var httpVersion: String

    /// Creates a head.
    package init(url: URL, statusCode: Int, headers: HeaderFields = HeaderFields(), httpVersion: String = "HTTP/1.1") {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.httpVersion = httpVersion
    }

    /// A `Content-Length` value: one or more ASCII digits (no sign), with spaces and tabs around them
    /// allowed, that fit in an `Int64`; otherwise `nil`. Run for every response on the loop thread: bytes,
    /// not Characters.
    package static func contentLength(from value: String) -> Int64? {
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

    /// Whether `status` is a redirect Herald follows (with a `Location`): 301, 302, 303, 307 or 308.
    package static func isRedirect(status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }
}
