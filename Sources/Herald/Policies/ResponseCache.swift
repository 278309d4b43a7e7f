import Foundation

/// A response kept by a ``ResponseCache``: the head, the body and when it was stored.
public struct CachedResponse: Sendable, Hashable {
    /// The response head as received.
    public var response: HTTPResponse
    /// The response body, after content decoding.
    public var data: Data
    /// When the response was stored; its age is measured from here.
    public var storageDate: Date

    /// Creates a cache entry.
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The body.
    ///   - storageDate: When it was stored; default now.
    public init(response: HTTPResponse, data: Data, storageDate: Date = Date()) {
        self.response = response
        self.data = data
        self.storageDate = storageDate
    }
}

/// Where a session keeps responses for reuse: set one as ``SessionConfiguration/responseCache``.
///
/// The session decides *what* may be stored and *when* a stored response may be served; the cache only
/// keeps entries, keyed by request. Herald stores only `GET` requests' `200` responses of data tasks
/// whose `Cache-Control` allows it and that state an explicit freshness lifetime:
///
/// - **Not stored:** a response with `Cache-Control: no-store` or `no-cache` (Herald does not revalidate,
///   so a response that must be revalidated on every use is useless to it), `Vary: *`, or `Vary` on a field
///   other than `Accept-Encoding` (curl sends the same `Accept-Encoding` on every request); a request
///   with `Cache-Control: no-store`, a `Range` or an `Authorization` header; upload and download tasks.
/// - **Parsing:** `Cache-Control` is read as RFC 9111 §5.2 writes it: a quoted argument may hold commas
///   (`private="Set-Cookie, X-Trace"` is one directive, and a directive name inside the quotes does not
///   count), `max-age="60"` equals `max-age=60`, the first of a repeated directive counts, and a `max-age`
///   that is not a whole number of seconds makes the response stale.
/// - **`private` is stored:** this is a client's own cache, not a shared one (RFC 9111 §5.2.2.7).
/// - **Freshness:** `max-age` (`s-maxage` is for shared caches and ignored); otherwise `Expires` minus
///   `Date` (or minus the storage time without `Date`); a response with neither is not stored — Herald
///   applies no heuristic freshness. An `Age` header counts against the lifetime.
/// - **Serving:** a fresh entry answers a `GET` without touching the network (see
///   ``SessionConfiguration/responseCache``).
/// - **Revalidation:** a stale entry with an `ETag` or a `Last-Modified` is revalidated: the request goes
///   to the network with `If-None-Match` / `If-Modified-Since` (unless it sets a conditional field of
///   its own). A `304 Not Modified` completes the task with the stored response — status `200`, the stored
///   body, its header fields updated from the `304` — and stores it again with a new storage date; any
///   other answer is the task's response and replaces the entry. A stale entry without a validator is
///   ignored and the request goes to the network.
/// - **Bypass:** a request with `Cache-Control: no-cache` or `no-store`, or `Pragma: no-cache`, never
///   reads the cache.
///
/// Implementations must be safe to call from any thread. Herald calls them outside its own locks, from
/// the thread that resumes a task (lookups) and from the session's completion queue (stores).
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
    /// The key Herald's own caches use: the method and the absolute URL.
    static func key(for request: Request) -> String {
        request.method + " " + request.url.absoluteString
    }
}
