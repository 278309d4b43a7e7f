import Foundation
import HeraldCookies
import HeraldEngine

/// One HTTP cookie as a ``CookieStore`` keeps it (RFC 6265 §5.3's storage model).
public struct Cookie: Sendable, Hashable, Codable {
    /// The `SameSite` attribute's value.
    public enum SameSite: String, Sendable, Hashable, Codable, CaseIterable {
        /// `SameSite=Strict`.
        case strict = "Strict"
        /// `SameSite=Lax`.
        case lax = "Lax"
        /// `SameSite=None`.
        case none = "None"
    }

    /// The cookie's name.
    public var name: String
    /// The cookie's value, as the server sent it.
    public var value: String
    /// The host (for a host-only cookie) or the domain it is sent to, lowercased, without a leading dot; an
    /// internationalized name in its ASCII (punycode) form.
    public var domain: String
    /// Whether the cookie goes to ``domain`` alone (no `Domain` attribute) rather than to its subdomains too.
    public var isHostOnly: Bool
    /// The path prefix the cookie is sent for.
    public var path: String
    /// When the cookie expires; `nil` for a session cookie, kept until the store is released and never
    /// persisted.
    public var expiresAt: Date?
    /// Whether the cookie is sent only over `https`.
    public var isSecure: Bool
    /// Whether the cookie was marked `HttpOnly` (kept and reported; Herald is an HTTP API, so it is sent).
    public var isHTTPOnly: Bool
    /// The `SameSite` attribute, kept as received. Herald does not enforce it: a client library has no
    /// top-level site to compare with.
    public var sameSite: SameSite?
    /// When the cookie was first stored; a replacement keeps the original's date (it orders the `Cookie`
    /// field among cookies of the same path length).
    public var creationDate: Date

    /// Creates a cookie.
    /// - Parameters:
    ///   - name: The name.
    ///   - value: The value.
    ///   - domain: The host or domain; lowercased, one leading dot dropped (RFC 6265 §5.2.3). Give an
    ///     internationalized name in its ASCII (punycode) form, the form requests are matched in.
    ///   - isHostOnly: Whether it goes to `domain` alone; default `true`.
    ///   - path: The path prefix; default `/`.
    ///   - expiresAt: The expiry; default none (a session cookie).
    ///   - isSecure: `https` only; default `false`.
    ///   - isHTTPOnly: `HttpOnly`; default `false`.
    ///   - sameSite: `SameSite`; default none.
    ///   - creationDate: When it was created; default now.
    public init(
        name: String, value: String, domain: String, isHostOnly: Bool = true, path: String = "/",
        expiresAt: Date? = nil, isSecure: Bool = false, isHTTPOnly: Bool = false, sameSite: SameSite? = nil,
        creationDate: Date = Date()
    ) {
        self.name = name
        self.value = value
        self.domain = (domain.hasPrefix(".") ? String(domain.dropFirst()) : domain).lowercased()
        self.isHostOnly = isHostOnly
        self.path = path
        self.expiresAt = expiresAt
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.creationDate = creationDate
    }

    /// Whether the cookie has expired at `date`.
    /// - Parameter date: The time to check.
    /// - Returns: `true` when ``expiresAt`` is at or before `date`.
    public func isExpired(at date: Date) -> Bool {
        expiresAt.map { $0 <= date } ?? false
    }

    /// Whether the cookie is sent with a request to `url` at `date` (RFC 6265 §5.4): its domain and path
    /// match, it has not expired, and a ``isSecure`` cookie only over `https`.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - date: The time of the request.
    /// - Returns: Whether it is sent.
    public func matches(_ url: URL, at date: Date) -> Bool {
        Target(url).map { matches($0, at: date) } ?? false
    }

    /// What of a request URL the cookie rules look at, worked out once for all the cookies of a store.
    struct Target {
        /// The host in its ASCII form, lowercased.
        let host: String
        let isSecure: Bool
        let path: String

        /// The target of a request to `url`, with its host and path as libcurl sends them.
        init?(_ written: URL) {
            let url = ParsedURL.asSent(written)
            guard let urlHost = url.host else { return nil }
            host = IDNA.asciiName(urlHost) ?? urlHost.lowercased()
            isSecure = url.scheme?.lowercased() == "https"
            path = CookieMatching.requestPath(of: url)
        }
    }

    /// Whether the cookie is sent with a request to `target` at `date` (see ``matches(_:at:)``).
    func matches(_ target: Target, at date: Date) -> Bool {
        guard !isExpired(at: date), !isSecure || target.isSecure else { return false }
        let domainMatches = isHostOnly ? target.host == domain : CookieRules.domainMatches(target.host, domain)
        return domainMatches && CookieMatching.pathMatches(target.path, path)
    }

    /// The identity a cookie is replaced by: name, domain, host-only flag and path (RFC 6265bis §5.7, which adds
    /// the flag to RFC 6265's three: a `Domain` cookie a sibling host sets doesn't replace a site's host-only one).
    var key: String { "\(name)\u{0}\(domain)\u{0}\(path)\u{0}\(isHostOnly ? "h" : "d")" }

    /// Why the cookie could not be sent as it is, or `nil` when it can: a name or value with a control
    /// character or `;` would end the `Cookie` field or add one (a line break, a field of its own), an empty
    /// name or one with `=` reads back as another cookie, a domain or path with a control character or a
    /// path not starting with `/` matches nothing it should, and a name and value over 4096 bytes together
    /// or a domain or path over 1024 is more than any response may set.
    var malformation: String? {
        if name.isEmpty { return "an empty name" }
        if CookieMatching.hasControlCharacter(name) || CookieMatching.hasControlCharacter(value) {
            return "a control character in its name or value"
        }
        if name.utf8.contains(where: { $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "=") }) {
            return "a `;` or `=` in its name"
        }
        if value.utf8.contains(UInt8(ascii: ";")) { return "a `;` in its value" }
        if domain.isEmpty || CookieMatching.hasControlCharacter(domain) {
            return "an empty domain or a control character in it"
        }
        if !path.hasPrefix("/") || CookieMatching.hasControlCharacter(path) {
            return "a path not starting with `/`, or a control character in it"
        }
        if name.utf8.count + value.utf8.count > SetCookieParser.maximumNameValueLength {
            return "a name and value longer than \(SetCookieParser.maximumNameValueLength) bytes together"
        }
        if domain.utf8.count > SetCookieParser.maximumAttributeValueLength
            || path.utf8.count > SetCookieParser.maximumAttributeValueLength
        {
            return "a domain or path longer than \(SetCookieParser.maximumAttributeValueLength) bytes"
        }
        return nil
    }
}

extension Cookie {
    /// The cookie a `Set-Cookie` field set, as the parser read it.
    init(_ fields: SetCookieParser.Fields) {
        self.init(
            name: fields.name, value: fields.value, domain: fields.domain, isHostOnly: fields.isHostOnly,
            path: fields.path, expiresAt: fields.expiresAt, isSecure: fields.isSecure, isHTTPOnly: fields.isHTTPOnly,
            sameSite: fields.sameSite.flatMap(SameSite.init(rawValue:)), creationDate: fields.creationDate)
    }
}
