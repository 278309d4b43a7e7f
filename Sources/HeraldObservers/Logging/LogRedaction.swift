import Foundation
import Herald

/// What ``LoggingObserver`` (and ``JSONLinesEventLog``) never write out in clear.
///
/// By default the values of `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`, the user
/// name and password of URLs, and the values of the query parameters that sign pre-signed URLs
/// (``HTTPSemanticConventions/redactedQueryItems``: `sig`, `Signature`, `X-Amz-Signature`, …) are replaced
/// with `REDACTED`. ``TracingObserver`` redacts `url.full` by the same rules. Add more with
/// ``redactHeader(_:)`` and ``redactQueryItem(_:)``:
///
/// ```swift
/// var redaction = LogRedaction.default
/// redaction.redactHeader("X-Api-Key")
/// redaction.redactQueryItem("token")
/// ```
public struct LogRedaction: Sendable, Hashable {
    /// The placeholder written instead of a secret.
    public static let placeholder = "REDACTED"

    /// Header names whose values are redacted, lowercased.
    public private(set) var headerNames: Set<String>
    /// Query item names whose values are redacted, lowercased.
    public private(set) var queryItemNames: Set<String>

    /// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`, URL credentials, and the query
    /// parameters of ``HTTPSemanticConventions/redactedQueryItems``.
    public static let `default` = LogRedaction(
        headerNames: ["authorization", "proxy-authorization", "cookie", "set-cookie"],
        queryItemNames: HTTPSemanticConventions.redactedQueryItems)

    /// Creates a redaction policy. URL credentials are always redacted.
    /// - Parameters:
    ///   - headerNames: Header names whose values are redacted (any case).
    ///   - queryItemNames: Query item names whose values are redacted (any case).
    public init(headerNames: Set<String>, queryItemNames: Set<String> = []) {
        self.headerNames = Set(headerNames.map { $0.lowercased() })
        self.queryItemNames = Set(queryItemNames.map { $0.lowercased() })
    }

    /// Also redacts the values of the header `name` (any case).
    /// - Parameter name: A header name, such as `"X-Api-Key"`.
    public mutating func redactHeader(_ name: String) {
        headerNames.insert(name.lowercased())
    }

    /// Also redacts the values of the query item `name` (any case).
    /// - Parameter name: A query item name, such as `"token"`.
    public mutating func redactQueryItem(_ name: String) {
        queryItemNames.insert(name.lowercased())
    }

    /// The URL as text, with credentials and the redacted query items' values replaced.
    /// - Parameter url: Any URL.
    /// - Returns: Text safe to log.
    public func redacting(_ url: URL) -> String {
        url.redacted(queryItems: queryItemNames)
    }

    /// `text` — an error message, say — with every secret `urls` carry in clear (passwords, and the values of
    /// the redacted query items) replaced by `REDACTED`: a message may quote the URL it is about.
    /// - Parameters:
    ///   - text: Any text.
    ///   - urls: The URLs whose secrets must not appear in it.
    /// - Returns: Text safe to log.
    public func redacting(_ text: String, secretsOf urls: [URL]) -> String {
        scrubbing(text, of: urls.flatMap { $0.secretValues(queryItems: queryItemNames) })
    }

    /// The header fields as `name: value` lines' worth of pairs, with redacted values replaced.
    /// - Parameter headers: Any header fields.
    /// - Returns: `(name, value)` pairs in the original order, safe to log.
    public func redacting(_ headers: HTTPHeaders) -> [(name: String, value: String)] {
        headers.map { field in
            (field.name, headerNames.contains(field.name.lowercased()) ? Self.placeholder : field.value)
        }
    }
}
