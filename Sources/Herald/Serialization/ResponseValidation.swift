import Foundation

/// The acceptance rules every serializer applies before it parses a body: status codes, then content types.
///
/// This is the one place validation lives; each serializer holds a `ResponseValidation` and calls
/// ``validate(_:data:)``.
public struct ResponseValidation: Sendable, Hashable {
    /// The status codes accepted, or `nil` to accept any. Default: `200..<300`.
    public var acceptableStatusCodes: Set<Int>?
    /// The media types accepted, or `nil` to accept any. Default: `nil`.
    ///
    /// Entries are media types, compared case-insensitively and without parameters (an entry's own
    /// `; charset=…` and surrounding spaces are left out, as the response's are): an exact type
    /// (`"application/json"`), a wildcard subtype (`"text/*"`), everything (`"*/*"`), or a structured
    /// syntax suffix (`"*/*+json"` accepts `application/problem+json`, `application/vnd.api+json`, …).
    public var acceptableContentTypes: Set<String>?

    /// Creates validation rules.
    ///
    /// - Parameters:
    ///   - acceptableStatusCodes: The status codes accepted, or `nil` for any. Default: `200..<300`.
    ///   - acceptableContentTypes: The media types accepted, or `nil` for any. Default: any.
    public init(acceptableStatusCodes: Set<Int>? = Set(200..<300), acceptableContentTypes: Set<String>? = nil) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// 2xx status codes, any content type: AFNetworking's `AFHTTPResponseSerializer`.
    public static let `default` = ResponseValidation()

    /// 2xx status codes and JSON content types: AFNetworking's `AFJSONResponseSerializer`, plus any `+json` type.
    ///
    /// Accepts `application/json`, `text/json`, `text/javascript` (AFNetworking's set) and, unlike
    /// AFNetworking, any `+json` structured suffix such as `application/problem+json` (RFC 6839), which
    /// APIs commonly use for error bodies.
    public static let json = ResponseValidation(
        acceptableContentTypes: ["application/json", "text/json", "text/javascript", "*/*+json"]
    )

    /// Checks the status code, then the content type.
    ///
    /// An empty body passes the content-type check whatever its `Content-Type` (as Alamofire does): there
    /// is nothing to misinterpret, and `204`/`HEAD` responses often carry the type of the absent body.
    /// A non-empty body without a `Content-Type` fails when content types are restricted.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode`` (with ``HeraldError/statusCode`` set) or
    ///   ``HeraldError/Code/unacceptableContentType``.
    public func validate(_ response: HTTPResponse, data: Data) throws(HeraldError) {
        try validate(response, data: data, hasBody: !data.isEmpty)
    }

    /// ``validate(_:data:)`` for a serializer with rules of its own for what counts as no body (JSON's: a `204`
    /// or `205`, or nothing but whitespace), which then passes the content-type check as an empty body does.
    func validate(_ response: HTTPResponse, data: Data, hasBody: Bool) throws(HeraldError) {
        if let failure = failure(of: response, hasBody: hasBody) {
            throw HeraldError(
                failure.code, failure.message, url: response.url, response: response, responseBody: data)
        }
    }

    /// Why `response` fails the checks — the code and the message of the error to throw — or `nil` when it
    /// passes; `hasBody` says whether a body came (or, for a streamed body, is coming) with it.
    func failure(of response: HTTPResponse, hasBody: Bool) -> (code: HeraldError.Code, message: String)? {
        if let acceptableStatusCodes, !acceptableStatusCodes.contains(response.statusCode) {
            return (
                .unacceptableStatusCode,
                "unacceptable status code \(response.statusCode) (acceptable: \(Self.summary(of: acceptableStatusCodes)))"
            )
        }
        guard let acceptableContentTypes, hasBody else { return nil }
        if let mimeType = response.mimeType, Self.matches(mimeType, anyOf: acceptableContentTypes) { return nil }
        let received = response.mimeType.map { "\"\($0)\"" } ?? "no Content-Type"
        return (
            .unacceptableContentType,
            "unacceptable content type: received \(received), acceptable: \(acceptableContentTypes.sorted().joined(separator: ", "))"
        )
    }

    static func matches(_ mimeType: String, anyOf patterns: Set<String>) -> Bool {
        patterns.contains { matches(mimeType, pattern: normalized($0)) }
    }

    /// A pattern as the response's type is compared: without parameters (`; charset=utf-8`) or surrounding
    /// spaces, lowercased. A pattern written with them would otherwise match no response at all.
    private static func normalized(_ pattern: String) -> String {
        let type = pattern.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased()
    }

    private static func matches(_ mimeType: String, pattern: String) -> Bool {
        if pattern == mimeType || pattern == "*/*" { return true }
        let parts = mimeType.split(separator: "/", maxSplits: 1)
        let patternParts = pattern.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, patternParts.count == 2 else { return false }
        let (type, subtype) = (parts[0], parts[1])
        let (patternType, patternSubtype) = (patternParts[0], patternParts[1])
        guard patternType == "*" || patternType == type else { return false }
        if patternSubtype == "*" { return true }
        if patternSubtype.hasPrefix("*+") {
            // "*+json" matches "problem+json", not "json" itself nor "+json" alone.
            let suffix = patternSubtype.dropFirst()
            return subtype.count > suffix.count && subtype.hasSuffix(suffix)
        }
        return patternSubtype == subtype
    }

    /// `[200, 201, …, 299, 304]` as `"200-299, 304"`, so the message stays short however large the set is.
    static func summary(of codes: Set<Int>) -> String {
        var ranges: [ClosedRange<Int>] = []
        for code in codes.sorted() {
            if let last = ranges.last, last.upperBound + 1 == code {
                ranges[ranges.count - 1] = last.lowerBound...code
            } else {
                ranges.append(code...code)
            }
        }
        let parts = ranges.prefix(8).map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
        return parts.joined(separator: ", ") + (ranges.count > 8 ? ", …" : "")
    }
}
