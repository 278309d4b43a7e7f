import Foundation

/// RFC 6265's matching rules (§5.1.3, §5.1.4), as pure functions: what the cookie store and the public suffix
/// rules compare names and paths with.
package enum CookieMatching {
    /// Whether `text` holds a control character other than a tab, which RFC 6265bis refuses in a cookie.
    package static func hasControlCharacter(_ text: some StringProtocol) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Whether `host` domain-matches `domain` (both lowercased): equal, or a name ending in `.domain`.
    package static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        guard !domain.isEmpty, host.hasSuffix("." + domain) else { return false }
        return !isIPAddress(host)
    }

    /// Whether the request path `requestPath` path-matches the cookie path `cookiePath`.
    package static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// The default path of a cookie set by a response to `url`: the directory of its path, or `/`.
    package static func defaultPath(for url: URL) -> String {
        let path = requestPath(of: url)
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// The path of `url` as sent, `/` when empty.
    package static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }

    /// Whether `host` is an IPv4 or IPv6 literal (domain matching never applies to those).
    package static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count == 4 && labels.allSatisfy { label in !label.isEmpty && label.allSatisfy(\.isNumber) }
    }
}
