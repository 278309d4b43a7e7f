import Foundation

/// RFC 6265's matching rules (§5.1.3, §5.1.4), as pure functions.
public enum CookieRules {
    /// Whether `host` domain-matches `domain`: equal, or `host` ends with `.domain` and is a name, not an
    /// IP address.
    /// - Parameters:
    ///   - host: The request host, lowercased.
    ///   - domain: The cookie's domain, lowercased.
    /// - Returns: Whether they match.
    public static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        guard !domain.isEmpty, host.hasSuffix("." + domain) else { return false }
        return !isIPAddress(host)
    }

    /// Whether `requestPath` path-matches `cookiePath`: equal, or `cookiePath` is a prefix ending in `/`,
    /// or a prefix followed by `/` in `requestPath`.
    /// - Parameters:
    ///   - requestPath: The request URL's path (`/` when empty).
    ///   - cookiePath: The cookie's path.
    /// - Returns: Whether they match.
    public static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// The default path of a cookie set by a response to `url` (§5.1.4): the directory of its path.
    /// - Parameter url: The request URL.
    /// - Returns: `/` or the path up to, not including, its last `/`.
    public static func defaultPath(for url: URL) -> String {
        let path = requestPath(of: url)
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// The path of `url` as sent, `/` when empty.
    static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }

    /// Whether `host` is an IPv4 or IPv6 literal (domain matching never applies to those).
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count == 4 && labels.allSatisfy { label in !label.isEmpty && label.allSatisfy(\.isNumber) }
    }
}
