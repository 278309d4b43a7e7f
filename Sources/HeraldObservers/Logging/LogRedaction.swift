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

    /// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`, the signing tokens AWS and Google
    /// clients send as header fields (`X-Amz-Security-Token`, `X-Goog-Credential`), URL credentials, and the
    /// query parameters of ``HTTPSemanticConventions/redactedQueryItems``.
    public static let `default` = LogRedaction(
        headerNames: [
            "authorization", "proxy-authorization", "cookie", "set-cookie", "x-amz-security-token", "x-goog-credential",
        ],
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

    /// The header fields as `name: value` lines' worth of pairs, with redacted values replaced, and the URLs
    /// that `Location`, `Content-Location`, `Link` and `Refresh` carry redacted as ``redacting(_:)-(URL)``
    /// redacts a URL (a redirect to a pre-signed URL names its signature there).
    /// - Parameter headers: Any header fields.
    /// - Returns: `(name, value)` pairs in the original order, safe to log.
    public func redacting(_ headers: HTTPHeaders) -> [(name: String, value: String)] {
        headers.map { field in
            let name = field.name.lowercased()
            if headerNames.contains(name) { return (field.name, Self.placeholder) }
            switch name {
            case "location", "content-location": return (field.name, redactingReference(field.value))
            case "link": return (field.name, redactingReferences(in: field.value, between: "<", and: ">"))
            case "refresh": return (field.name, redactingRefresh(field.value))
            default: return (field.name, field.value)
            }
        }
    }

    /// A URI reference (absolute or relative) redacted as a URL; `REDACTED` whole when it doesn't parse.
    private func redactingReference(_ reference: String) -> String {
        let trimmed = reference.trimmingCharacters(in: .whitespaces)
        guard let url = URL(string: trimmed) else { return Self.placeholder }
        return redacting(url)
    }

    /// `value` with each reference between `open` and `close` (a `Link` field's `<…>`) redacted.
    private func redactingReferences(in value: String, between open: Character, and close: Character) -> String {
        var result = ""
        var rest = Substring(value)
        while let start = rest.firstIndex(of: open), let end = rest[start...].firstIndex(of: close) {
            result += rest[...start]
            result += redactingReference(String(rest[rest.index(after: start)..<end]))
            result.append(close)
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    /// A `Refresh` value with its URL redacted, read as HTML reads it: the delay (digits and dots), blanks, an
    /// optional `;` or `,`, blanks, an optional `url =`, then the URL (quotes taken off) — `5; url=https://…`,
    /// `0; https://…` and `0, URL = 'https://…'` alike. A value that doesn't read so is redacted whole.
    private func redactingRefresh(_ value: String) -> String {
        let blanks: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        var rest = Substring(value).drop(while: blanks)
        rest = rest.drop { $0.isASCII && ($0.isNumber || $0 == ".") }
        guard rest.count < value.count else { return "REDACTED" }
        rest = rest.drop(while: blanks)
        if rest.first == ";" || rest.first == "," { rest = rest.dropFirst().drop(while: blanks) }
        if rest.prefix(3).lowercased() == "url" {
            let afterName = rest.dropFirst(3).drop(while: blanks)
            if afterName.first == "=" { rest = afterName.dropFirst().drop(while: blanks) }
        }
        let prefix = value[..<rest.startIndex]
        var reference = rest.trimmingCharacters(in: .whitespaces)
        guard !reference.isEmpty else { return value }
        if let quote = reference.first, quote == "'" || quote == "\"" {
            reference = String(reference.dropFirst())
            if let end = reference.firstIndex(of: quote) { reference = String(reference[..<end]) }
        }
        return prefix + redactingReference(reference)
    }
}
