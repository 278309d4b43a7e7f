import Foundation

/// Parses `Set-Cookie` fields (RFC 6265 §5.2) into cookies, applying the storage rules of §5.3.
package enum SetCookieParser {
    /// The most bytes of name and value together; a longer cookie is ignored (RFC 6265bis).
    package static let maximumNameValueLength = 4096
    /// The most bytes of an attribute's value; a longer attribute is ignored (RFC 6265bis).
    package static let maximumAttributeValueLength = 1024

    /// The cookie a field sets, with the storage rules applied: what the store keeps.
    package struct Fields: Equatable, Sendable {
        package var name: String
        package var value: String
        /// Lowercased, in ASCII.
        package var domain: String
        package var isHostOnly: Bool
        package var path: String
        /// `nil` for a session cookie.
        package var expiresAt: Date?
        package var isSecure: Bool
        package var isHTTPOnly: Bool
        /// `Strict`, `Lax` or `None`, as spelled here; `nil` when absent or unrecognized.
        package var sameSite: String?
        package var creationDate: Date
    }

    /// The spellings of `SameSite`'s values; any case is accepted.
    package static let sameSiteValues = ["Strict", "Lax", "None"]

    /// What a `Set-Cookie` field asks the store to do.
    package enum Outcome: Equatable {
        /// Store (or replace) this cookie; an expired one removes its stored namesake.
        case store(Fields)
        /// Ignore the field, for this reason.
        case ignored(String)
    }

    /// The cookie `field` sets for a response to `url` at `now`, or why it is ignored.
    package static func parse(
        _ field: String, from url: URL, now: Date, publicSuffixes: PublicSuffixRules
    ) -> Outcome {
        guard let urlHost = url.host, !urlHost.isEmpty else { return .ignored("the URL has no host") }
        // RFC 6265bis: a control character other than a tab anywhere in the field (RFC 6265 has no such rule).
        guard !CookieMatching.hasControlCharacter(field) else {
            return .ignored("a control character")
        }
        // Names compare in ASCII: an internationalized host or Domain in Unicode as in punycode.
        let host = IDNA.asciiName(urlHost) ?? urlHost.lowercased()
        // Split at `;` and `=` as Unicode scalars, not Characters: a `;` followed by a combining mark is one
        // Character with it, yet it still ends the pair (and must never end up inside a name or value).
        var parts = field.unicodeScalars.split(separator: ";", omittingEmptySubsequences: false)
        let pair = parts.removeFirst()
        guard let equals = pair.firstIndex(of: "=") else { return .ignored("no name=value pair") }
        let name = trimmingBlanks(pair[..<equals])
        let value = trimmingBlanks(pair[pair.index(after: equals)...])
        guard !name.isEmpty else { return .ignored("an empty name") }
        guard name.utf8.count + value.utf8.count <= maximumNameValueLength else { return .ignored("too long") }

        var expires: Date?
        var maxAge: Date?
        var domainAttribute = ""
        var path: String?
        var isSecure = false
        var isHTTPOnly = false
        var sameSite: String?
        for attribute in parts {
            let (key, rawValue) = split(attribute)
            // RFC 6265bis: an attribute value over 1024 bytes is ignored.
            guard rawValue.utf8.count <= maximumAttributeValueLength else { continue }
            switch key.lowercased() {
            case "expires":
                // §5.2.1: a date the algorithm refuses leaves the attribute ignored. A later date than 400 days
                // from now is that day (RFC 6265bis), as for `Max-Age`.
                if let date = CookieDate.parse(rawValue) {
                    expires = min(date, now.addingTimeInterval(TimeInterval(maximumLifetime)))
                }
            case "max-age":
                if let date = maxAgeExpiry(rawValue, now: now) { maxAge = date }
            case "domain":
                // §5.2.3: one leading dot is dropped, no more (`..example.org` names no domain).
                let domain = rawValue.hasPrefix(".") ? rawValue.dropFirst() : Substring(rawValue)
                if !domain.isEmpty { domainAttribute = IDNA.asciiName(domain) ?? domain.lowercased() }
            case "path":
                path = rawValue.hasPrefix("/") ? rawValue : nil
            case "secure":
                isSecure = true
            case "httponly":
                isHTTPOnly = true
            case "samesite":
                sameSite = sameSiteValues.first { $0.lowercased() == rawValue.lowercased() }
            default:
                break
            }
        }

        var isHostOnly = true
        var domain = host
        if !domainAttribute.isEmpty {
            // A name with a trailing dot (`github.io.`) is the same name: it is a public suffix when its undotted
            // form is one.
            let undotted = domainAttribute.hasSuffix(".") ? String(domainAttribute.dropLast()) : domainAttribute
            if publicSuffixes.isPublicSuffix(undotted) {
                guard domainAttribute == host else {
                    return .ignored("the domain \(domainAttribute) is a public suffix")
                }
                // A public suffix that is the host itself: a host-only cookie for that host.
            } else {
                guard CookieMatching.domainMatches(host, domainAttribute) else {
                    return .ignored("the domain \(domainAttribute) does not match the host \(host)")
                }
                // What browsers do beyond §5.3 step 5: a domain broader than the host's registrable domain is
                // refused even when no rule names it (`kobe.jp` from `city.kobe.jp`, which `!city.kobe.jp`
                // makes registrable under the wildcard `*.kobe.jp`).
                if domainAttribute != host {
                    guard let registrable = publicSuffixes.registrableDomain(for: host),
                        CookieMatching.domainMatches(domainAttribute, registrable)
                    else {
                        return .ignored(
                            "the domain \(domainAttribute) is broader than the registrable domain of \(host)")
                    }
                }
                // An IP address has no subdomains: `Domain=` naming it keeps the cookie to it alone.
                if !CookieMatching.isIPAddress(host) {
                    isHostOnly = false
                    domain = domainAttribute
                }
            }
        }
        if isSecure, url.scheme?.lowercased() != "https" {
            return .ignored("a Secure cookie set over http")
        }
        if let broken = namePrefixBroken(
            name: name, isSecure: isSecure, isHostOnly: isHostOnly && domainAttribute.isEmpty, path: path)
        {
            return .ignored(broken)
        }
        // A path from the URL (none was given) or a host can be longer than an attribute may be: such a cookie
        // could never be sent (libcurl sends no `Cookie` field that long) and would only swell the store.
        let cookiePath = path ?? CookieMatching.defaultPath(for: url)
        guard cookiePath.utf8.count <= maximumAttributeValueLength, domain.utf8.count <= maximumAttributeValueLength
        else {
            return .ignored("a path or domain longer than \(maximumAttributeValueLength) bytes")
        }
        return .store(
            Fields(
                name: name, value: value, domain: domain, isHostOnly: isHostOnly,
                path: cookiePath, expiresAt: maxAge ?? expires, isSecure: isSecure,
                isHTTPOnly: isHTTPOnly, sameSite: sameSite, creationDate: now))
    }

    /// An attribute's name and value, split at its first `=` (a Unicode scalar), each without blanks around it.
    private static func split(_ attribute: Substring.UnicodeScalarView) -> (String, String) {
        guard let equals = attribute.firstIndex(of: "=") else { return (trimmingBlanks(attribute), "") }
        return (trimmingBlanks(attribute[..<equals]), trimmingBlanks(attribute[attribute.index(after: equals)...]))
    }

    /// Whether `name` starts with `prefix` (lowercase ASCII), in any case.
    /// What a cookie named `name` lacks of what its RFC 6265bis prefix promises (in any case), or `nil`:
    /// `__Secure-` promises a Secure cookie; `__Host-` one that is also host-only, set without a `Domain`, and
    /// for the whole host (an explicit `Path=/`; `path` is `nil` without one).
    package static func namePrefixBroken(name: String, isSecure: Bool, isHostOnly: Bool, path: String?) -> String? {
        if hasPrefix(name, "__secure-"), !isSecure {
            return "a __Secure- cookie without Secure"
        }
        if hasPrefix(name, "__host-"), !(isSecure && isHostOnly && path == "/") {
            return "a __Host- cookie without Secure, with a Domain, or without Path=/"
        }
        return nil
    }

    private static func hasPrefix(_ name: String, _ prefix: String) -> Bool {
        name.utf8.count >= prefix.utf8.count
            && zip(name.utf8, prefix.utf8).allSatisfy { byte, expected in
                (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected
            }
    }

    /// `text` without leading and trailing spaces and tabs: the only white space RFC 6265 trims (a no-break
    /// space is part of a value).
    private static func trimmingBlanks(_ text: Substring.UnicodeScalarView) -> String {
        let isBlank: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(Substring(text[first...last]))
    }

    /// The expiry a `Max-Age` value sets (§5.2.2): a number of seconds, optionally negative; zero or less
    /// is the earliest date, and a lifetime is capped at 400 days (RFC 6265bis). `nil` (the attribute
    /// ignored) for anything but an optional `-` and digits.
    private static func maxAgeExpiry(_ text: String, now: Date) -> Date? {
        let digits = text.hasPrefix("-") ? text.utf8.dropFirst() : text.utf8[...]
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        // More digits than an Int holds still name a lifetime: the longest, or (negative) none.
        let seconds = Int(text) ?? (text.hasPrefix("-") ? 0 : Int.max)
        guard seconds > 0 else { return .distantPast }
        return now.addingTimeInterval(TimeInterval(min(seconds, maximumLifetime)))
    }

    /// The longest lifetime `Max-Age` or `Expires` gives a cookie, 400 days (RFC 6265bis).
    package static let maximumLifetime = 400 * 86_400
}
