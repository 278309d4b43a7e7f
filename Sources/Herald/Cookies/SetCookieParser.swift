import Foundation

/// Parses `Set-Cookie` fields (RFC 6265 §5.2) into cookies, applying the storage rules of §5.3.
enum SetCookieParser {
    /// The most bytes of name and value together; a longer cookie is ignored (RFC 6265bis).
    static let maximumNameValueLength = 4096

    /// What a `Set-Cookie` field asks the store to do.
    enum Outcome: Equatable {
        /// Store (or replace) this cookie; an expired one removes its stored namesake.
        case store(Cookie)
        /// Ignore the field, for this reason.
        case ignored(String)
    }

    /// The cookie `field` sets for a response to `url` at `now`, or why it is ignored.
    static func parse(
        _ field: String, from url: URL, now: Date, publicSuffixes: PublicSuffixList
    ) -> Outcome {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return .ignored("the URL has no host") }
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let pair = parts.removeFirst()
        guard let equals = pair.firstIndex(of: "=") else { return .ignored("no name=value pair") }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return .ignored("an empty name") }
        guard name.utf8.count + value.utf8.count <= maximumNameValueLength else { return .ignored("too long") }
        guard !(name + value).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return .ignored("a control character")
        }

        var expires: Date?
        var maxAge: Date?
        var domainAttribute = ""
        var path: String?
        var isSecure = false
        var isHTTPOnly = false
        var sameSite: Cookie.SameSite?
        for attribute in parts {
            let (key, rawValue) = split(attribute)
            switch key.lowercased() {
            case "expires":
                if let date = RetryAfter.httpDate(rawValue) ?? lenientDate(rawValue) { expires = date }
            case "max-age":
                guard let seconds = Int(rawValue), rawValue.first == "-" || rawValue.first?.isNumber == true
                else { break }
                maxAge = seconds <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(min(seconds, 400 * 86_400)))
            case "domain":
                var domain = rawValue.lowercased()
                while domain.hasPrefix(".") { domain.removeFirst() }
                if !domain.isEmpty { domainAttribute = domain }
            case "path":
                path = rawValue.hasPrefix("/") ? rawValue : nil
            case "secure":
                isSecure = true
            case "httponly":
                isHTTPOnly = true
            case "samesite":
                sameSite = Cookie.SameSite.allCases.first { $0.rawValue.lowercased() == rawValue.lowercased() }
            default:
                break
            }
        }

        var isHostOnly = true
        var domain = host
        if !domainAttribute.isEmpty {
            if publicSuffixes.isPublicSuffix(domainAttribute) {
                guard domainAttribute == host else {
                    return .ignored("the domain \(domainAttribute) is a public suffix")
                }
                // A public suffix that is the host itself: a host-only cookie for that host.
            } else {
                guard CookieRules.domainMatches(host, domainAttribute) else {
                    return .ignored("the domain \(domainAttribute) does not match the host \(host)")
                }
                isHostOnly = false
                domain = domainAttribute
            }
        }
        if isSecure, url.scheme?.lowercased() != "https" {
            return .ignored("a Secure cookie set over http")
        }
        return .store(
            Cookie(
                name: name, value: value, domain: domain, isHostOnly: isHostOnly,
                path: path ?? CookieRules.defaultPath(for: url), expiresAt: maxAge ?? expires, isSecure: isSecure,
                isHTTPOnly: isHTTPOnly, sameSite: sameSite, creationDate: now))
    }

    private static func split(_ attribute: String) -> (String, String) {
        guard let equals = attribute.firstIndex(of: "=") else {
            return (attribute.trimmingCharacters(in: .whitespaces), "")
        }
        return (
            attribute[..<equals].trimmingCharacters(in: .whitespaces),
            attribute[attribute.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        )
    }

    /// The `Expires` forms servers send besides the HTTP date: dashes (`Wed, 21-Oct-2015 07:28:00 GMT`).
    private static func lenientDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd-MMM-yyyy HH:mm:ss 'GMT'", "EEE, dd MMM yyyy HH:mm:ss Z"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
