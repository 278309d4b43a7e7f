import Foundation
import HeraldCookies

/// RFC 6265's matching rules (§5.1.3, §5.1.4), as pure functions.
public enum CookieRules {
    /// Whether `host` domain-matches `domain`: equal, or `host` ends with `.domain` and is a name, not an
    /// IP address.
    /// - Parameters:
    ///   - host: The request host, lowercased.
    ///   - domain: The cookie's domain, lowercased.
    /// - Returns: Whether they match.
    public static func domainMatches(_ host: String, _ domain: String) -> Bool {
        CookieMatching.domainMatches(host, domain)
    }

    /// Whether `requestPath` path-matches `cookiePath`: equal, or `cookiePath` is a prefix ending in `/`,
    /// or a prefix followed by `/` in `requestPath`.
    /// - Parameters:
    ///   - requestPath: The request URL's path (`/` when empty).
    ///   - cookiePath: The cookie's path.
    /// - Returns: Whether they match.
    public static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        CookieMatching.pathMatches(requestPath, cookiePath)
    }

    /// The default path of a cookie set by a response to `url` (§5.1.4): the directory of its path.
    /// - Parameter url: The request URL.
    /// - Returns: `/` or the path up to, not including, its last `/`.
    public static func defaultPath(for url: URL) -> String {
        CookieMatching.defaultPath(for: url)
    }
}
