import Foundation
import HeraldEngine

/// A response kept by a ``ResponseCache``: the head, the body and when it was stored.
public struct CachedResponse: Sendable, Hashable {
    /// The response head as received.
    public var response: HTTPResponse
    /// The response body, after content decoding.
    public var data: Data
    /// When the response was stored; its age is measured from here.
    public var storageDate: Date
    /// The header fields of the request that the response's `Vary` names, as that request carried them: a
    /// later request is answered from this entry only when it carries the same values (RFC 9111 §4.1). Empty
    /// when the response has no `Vary`.
    public var varyingRequestHeaders: HTTPHeaders

    /// Creates a cache entry.
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The body.
    ///   - storageDate: When it was stored; default now.
    ///   - varyingRequestHeaders: The request's fields that the response's `Vary` names; default none.
    public init(
        response: HTTPResponse, data: Data, storageDate: Date = Date(), varyingRequestHeaders: HTTPHeaders = [:]
    ) {
        self.response = response
        self.data = data
        self.storageDate = storageDate
        self.varyingRequestHeaders = varyingRequestHeaders
    }
}

/// Where a session keeps responses for reuse: set one as ``SessionConfiguration/responseCache``.
///
/// The session decides *what* may be stored and *when* a stored response may be served, as a private
/// (single-user) cache following RFC 9111; the cache only keeps entries, keyed by request (method and URL).
/// Herald ships two: ``InMemoryResponseCache`` and ``DiskResponseCache``. The rules in short (the
/// <doc:Caching> article has them in full):
///
/// - **Stored:** a data task's final answer to a `GET` — any status but `206` and `304` — when the response
///   states a freshness lifetime (`max-age`, `Expires`), says `public` or `private`, or has a status that
///   may be cached heuristically (`200`, `203`, `204`, `300`, `301`, `308`, `404`, `405`, `410`, `414`,
///   `501`); and when it can be used later: it is fresh for a while, or has a validator (`ETag`,
///   `Last-Modified`) to revalidate it with. `no-cache` responses are stored and revalidated on every use.
/// - **Not stored:** `no-store` (request or response), `Vary: *`, a request with a `Range` or an
///   `Authorization` header or a URL with a user name or password (libcurl sends it as `Authorization`, and a
///   key would hold the password), upload and download tasks, streamed bodies.
/// - **Freshness:** `max-age` (`s-maxage` is for shared caches and ignored), else `Expires` minus `Date`,
///   else 10% of the time since `Last-Modified` for the statuses above. The age counts the `Age` header
///   (its first member), the time between `Date` and the response's arrival, and the time since.
/// - **Serving:** a fresh entry answers a `GET` without credentials (no `Authorization`, no user name or password
///   in its URL) without touching the network, when the request's `Vary`
///   fields match the stored ones and its `Cache-Control` (`max-age`, `min-fresh`, `max-stale`) allows, with an
///   `Age` field of the entry's current age. A
///   stale entry within its `stale-while-revalidate` window is served too, and revalidated by a task of
///   its own.
/// - **Revalidation:** otherwise a stale entry with an `ETag` or a `Last-Modified` is revalidated with
///   `If-None-Match` / `If-Modified-Since` (unless the request sets a conditional field of its own). A
///   `304 Not Modified` completes the task with the stored response, its header fields updated from the
///   `304`, and stores it again; any other answer is the task's response and replaces the entry. A `304` to
///   the caller's own conditional request freshens the entry it confirms in the same way.
/// - **Invalidation:** a non-error answer (`2xx`, `3xx`) to a method other than `GET`, `HEAD`, `OPTIONS` or
///   `TRACE` removes the stored `GET` of its URL, and of its `Location` and `Content-Location` on the same
///   origin, whatever the task's kind.
/// - **Bypass:** a request with `Cache-Control: no-cache` or `no-store`, or `Pragma: no-cache`, never
///   reads the cache.
///
/// Implementations must be safe to call from any thread. Herald calls them outside its own locks, from
/// several: the thread that resumes a task (lookups), the session's completion queue (stores, removals, and
/// the lookup that freshens an entry a `304` confirmed), and a task's hook queue (the removal a redirect after
/// an unsafe method makes).
public protocol ResponseCache: AnyObject, Sendable {
    /// The entry stored for `request`, or `nil`. Freshness is the session's concern, not the cache's.
    func cachedResponse(for request: Request) -> CachedResponse?
    /// Stores `cachedResponse` for `request`, replacing any earlier entry.
    func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request)
    /// Removes the entry for `request`, if any.
    func removeCachedResponse(for request: Request)
    /// Removes every entry.
    func removeAllCachedResponses()
}

extension ResponseCache {
    /// The key Herald's own caches use: the method and the URL as the server sees it — without its fragment
    /// (never sent) or user information (never stored, and a `PUT` naming it changes the same resource), the
    /// scheme and host in lower case, no default port, an empty path as `/` — so that the spellings of one
    /// resource share an entry, and invalidating one invalidates the others.
    static func key(for request: Request) -> String {
        request.method + " " + ResponseCacheKey.normalized(request.url)
    }
}

/// The URL part of a cache key.
enum ResponseCacheKey {
    /// `url` as the server sees it; see ``ResponseCache/key(for:)``.
    static func normalized(_ url: URL) -> String {
        let text = url.absoluteString
        // Nearly every URL is written as the server sees it already: a scan of its bytes spares the lookup and the
        // store of every request a parse (about 2 µs each).
        if isNormal(text) { return text }
        // The path as libcurl sends it, its dot segments removed (`/a/../b` is `/b`).
        guard var components = URLComponents(string: ParsedURL.asSent(url).absoluteString) else { return text }
        components.fragment = nil
        components.user = nil
        components.password = nil
        let scheme = components.scheme?.lowercased()
        components.scheme = scheme
        if let host = components.percentEncodedHost { components.percentEncodedHost = host.lowercased() }
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        if components.percentEncodedPath.isEmpty, components.host != nil { components.percentEncodedPath = "/" }
        return components.string ?? text
    }

    /// Whether `text`, an absolute `http` or `https` URL, has nothing ``normalized(_:)`` would change: a lower-case
    /// scheme and host, no user information, no default port, a path without dot segments, and no fragment.
    /// `false` when unsure.
    private static func isNormal(_ text: String) -> Bool {
        let bytes = text.utf8
        let scheme: String
        if bytes.starts(with: "http://".utf8) {
            scheme = "http"
        } else if bytes.starts(with: "https://".utf8) {
            scheme = "https"
        } else {
            return false
        }
        let authorityStart = bytes.index(bytes.startIndex, offsetBy: scheme.utf8.count + 3)
        guard let pathStart = bytes[authorityStart...].firstIndex(where: { $0 == UInt8(ascii: "/") }),
            !bytes[pathStart...].contains(UInt8(ascii: "#")),
            !zip(bytes[pathStart...], bytes[pathStart...].dropFirst()).contains(where: {
                $0 == UInt8(ascii: "/") && $1 == UInt8(ascii: ".")
            })
        else { return false }
        let authority = bytes[authorityStart..<pathStart]
        // No user information, no upper case, and no port that is the scheme's own; `?` before the path's `/` is a
        // query after an empty path.
        guard
            !authority.contains(where: {
                $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") || (65...90).contains($0)
            })
        else { return false }
        let defaultPort = scheme == "http" ? ":80" : ":443"
        return !authority.reversed().starts(with: defaultPort.utf8.reversed())
    }
}
