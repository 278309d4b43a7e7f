import Foundation

/// The HTTP protocol versions a session may negotiate.
public enum HTTPVersion: Sendable, Hashable {
    /// HTTP/2 over TLS when the server offers it, HTTP/1.1 otherwise (curl's default).
    case automatic
    /// HTTP/1.1 only.
    case http1_1
    /// Try HTTP/2 for every request, falling back to HTTP/1.1 (an upgrade for plain HTTP).
    case http2
    /// HTTP/2 without negotiation, for servers known to speak it (plain-text HTTP/2 "prior knowledge"). Over
    /// TLS libcurl negotiates in the handshake all the same: as ``automatic`` with libcurl before 8.10; from
    /// 8.10 it offers only HTTP/2 there, so a server that speaks HTTP/1.1 alone may refuse the handshake.
    ///
    /// libcurl 7.88 (Debian 12's) fails any request that reuses such a cleartext connection, so with it each
    /// such request opens a connection of its own and closes it afterwards; from libcurl 8.0 requests share
    /// connections as streams.
    case http2PriorKnowledge
}

/// How a ``SessionManager`` makes its requests: timeouts, default headers, connection limits,
/// protocol version, the URL schemes it accepts and which servers it trusts.
///
/// A value type: a session copies it when created, so changing a configuration afterwards does not
/// affect sessions made from it.
public struct SessionConfiguration: Sendable, Hashable {
    /// The idle timeout: a request fails with ``HeraldError/Code/timedOut`` when no byte moves for this
    /// many seconds, or when connecting takes longer. Time spent suspended does not count, nor time spent
    /// waiting for a connection the session's limits hold back (``maximumConnectionsPerHost``: the requests
    /// past it wait for one, bounded by ``timeoutIntervalForResource``; with libcurl 7.80 or later) while
    /// another request of the session has a connection. While none has — the first connection still being
    /// made, or failed — a waiting request fails too once this long passes without one (counted from when it
    /// started waiting, or when a request with a connection last ended), so requests started together to a
    /// server that never answers fail together. Default 60;
    /// 0 disables it (connecting is then limited by ``timeoutIntervalForResource`` alone). A negative value or
    /// NaN makes every task factory throw ``HeraldError/Code/invalidRequest``.
    public var timeoutIntervalForRequest: TimeInterval = 60
    /// The longest a whole task may take, in seconds, from its first transfer's start: every redirect,
    /// authentication round and retry with it, and time spent suspended, in a hook deciding the next
    /// transfer or waiting out a retry's delay, on a clock that setting the system's time does not move. Then
    /// the task fails with ``HeraldError/Code/timedOut``; an attempt that fails once this time is spent is not
    /// offered to the retrier. Default 7 days; 0 disables it.
    /// A negative value or NaN makes every task factory throw ``HeraldError/Code/invalidRequest``. libcurl holds
    /// a transfer's timeouts in 32 bits of milliseconds: one longer than about 49.7 days ends a transfer then.
    public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600
    /// Headers added to every request that does not set the same field itself. After them, a request
    /// without `User-Agent` or `Accept-Language` gets ``DefaultHeaders``' values. `Content-Length` and
    /// `Transfer-Encoding` are not sent from here: libcurl frames each body itself.
    public var httpAdditionalHeaders: HTTPHeaders = [:]
    /// The most connections open to one host at a time; further requests wait for one. Default 6; 0 means no
    /// limit. This and the other limits below may not be negative: a negative one makes every task factory throw
    /// ``HeraldError/Code/invalidRequest``.
    ///
    /// It counts connections, not requests. Over HTTP/2 one connection carries many requests at once, as
    /// streams: requests started together to an origin with no connection yet wait for the first one's TLS
    /// handshake to say whether it speaks HTTP/2, and then share it, rather than each open a connection of its
    /// own. A connection takes as many streams at a time as the server allows, and no more than 100
    /// (libcurl's limit); requests beyond that open another connection, within this limit, or wait.
    ///
    /// Through an HTTP or HTTPS proxy, the host is the one a connection goes to: `https` requests go through a
    /// tunnel of their own per origin and are counted per origin, while `http` requests to every origin share
    /// the connections to the proxy, and this limit with them. Through a SOCKS proxy it counts per origin.
    public var maximumConnectionsPerHost: Int = 6
    /// The most connections open in all at a time; 0 means no limit. Default 0.
    ///
    /// Connections stay open after their transfers for the next ones, until they have been idle for curl's
    /// maximum age (118 seconds) or the session ends: with a limit, every connection it allows; without one,
    /// up to 64. Idle connections are not watched: one the server closed meanwhile (its socket left in
    /// `CLOSE_WAIT`) is found, closed and announced when the next request to its origin looks for a
    /// connection, as libcurl's pool is pruned then. (Left to curl's own rule, a pool keeps four idle connections for each transfer running when one
    /// finishes, so the end of a burst closes some that the next burst opens again.)
    public var maximumConnectionsTotal: Int = 0
    /// The protocol version to negotiate. Default ``HTTPVersion/automatic``.
    public var httpVersion: HTTPVersion = .automatic
    /// The URL schemes requests and redirects may use, lowercased. Default `["http", "https"]`; anything
    /// else (`ftp:`, `gopher:`, `dict:` …) is refused with ``HeraldError/Code/unsupportedURL``. Herald is an HTTP
    /// client: a scheme added here must be one libcurl speaks with a host (`ftp`), and a `file:` URL, which has
    /// none, is refused with ``HeraldError/Code/badURL`` whatever this set holds. A redirect goes to `http` and
    /// `https` only, whatever this set adds: a server's `Location` never makes the session speak another
    /// protocol. A scheme written with capitals, or one the libcurl running doesn't speak, makes every task
    /// factory throw ``HeraldError/Code/invalidRequest`` (libcurl would refuse the whole list).
    public var allowedProtocols: Set<String> = ["http", "https"]
    /// Whether redirects (301, 302, 303, 307, 308 with a `Location`) are followed. Default `true`; with
    /// `false` the 3xx response is the task's result. Herald follows each hop itself, so
    /// ``SessionManager/taskWillPerformHTTPRedirection`` sees every one.
    public var followsRedirects: Bool = true
    /// The most redirects followed for one request before it fails with
    /// ``HeraldError/Code/tooManyRedirects``. Default 16.
    public var maximumRedirects: Int = 16
    /// Whether a redirect from `https` to `http` is followed. Default `false`: such a hop fails with
    /// ``HeraldError/Code/unsupportedURL``, as the response would otherwise leave TLS's protection.
    public var allowsInsecureRedirects: Bool = false
    /// The largest response body, in bytes, that a data or upload task collects in memory. A response
    /// declaring a larger `Content-Length`, or growing past it as it arrives (counted after content
    /// decoding, so a small compressed body that inflates is caught too), stops the transfer: the task
    /// fails with ``HeraldError/Code/responseTooLarge`` and what was collected is released. Download
    /// tasks stream to a file and are not limited. Default 512 MiB; 0 disables the limit.
    public var maximumResponseSize: Int = 512 << 20
    /// The largest response head, in bytes (status line and header fields together, each response of a
    /// redirect chain counted on its own). A larger head stops the transfer with
    /// ``HeraldError/Code/badServerResponse``. Default 256 KiB; 0 disables Herald's check. libcurl
    /// enforces its own limits whatever this says: a single header line over 100 KiB, or a head over
    /// 300 KiB (about 128 KiB over HTTP/2), fails the same way.
    public var maximumHeaderSize: Int = 256 << 10
    /// How download tasks move their file to the destination: replace an existing file, create missing
    /// directories. Default none (see ``DownloadMoveOptions``).
    public var downloadMoveOptions: DownloadMoveOptions = []
    /// The folder in which the session makes its private folder for download tasks' temporary files, or
    /// `nil` (the default) for the process's temporary directory (`TMPDIR`, else `/tmp`).
    ///
    /// Choose a folder on the file system of the downloads' destinations: the final move is then a
    /// `rename`, and the size of `TMPDIR` (often a small `tmpfs` in memory) no longer limits a download.
    /// The session makes its folder there with a random name, mode 0700 (hidden, `.herald-XXXXXX`, in a
    /// folder you chose; `herald-XXXXXX` in the temporary directory), with the first download task, and
    /// opens each temporary file with `O_EXCL | O_NOFOLLOW`, mode 0600. The folder must be a directory
    /// owned by the process's effective user or by root, and not writable by group or others unless it is
    /// sticky (as `/tmp` is): another user who can rename entries in it could swap the session's folder.
    /// Otherwise a download task factory throws ``HeraldError/Code/fileIO`` and nothing is written.
    public var temporaryDirectory: URL?
    /// Where data tasks' responses are kept for reuse, or `nil` (the default) for no caching.
    ///
    /// With a cache, a data task's `GET` that finds a fresh entry completes from it **without touching the
    /// network**: it still resumes and completes exactly once, with its notifications and completion
    /// handler, but its ``SessionTask/metrics`` and ``TaskCompletion/metrics`` are `nil` and the network
    /// hooks (``SessionManager/dataTaskDidReceiveResponse``, ``SessionManager/dataTaskDidReceiveData``) are
    /// not called. A stale entry with a validator is revalidated with the server, and a `304` completes the
    /// task with the stored response (then it did use the network: it has metrics, and the hooks see the
    /// `304` as nothing more than a confirmation). What is stored and for how long: see ``ResponseCache``;
    /// ``SessionManager/dataTaskWillCacheResponse`` can change or veto each store. Two configurations are
    /// equal only if they hold the same cache object.
    public var responseCache: (any ResponseCache)? {
        get { responseCacheBox.cache }
        set { responseCacheBox = ResponseCacheBox(cache: newValue) }
    }
    private var responseCacheBox = ResponseCacheBox(cache: nil)
    /// Which servers' TLS certificates are trusted: certificate authorities, pinned public keys, and the
    /// explicitly named opt-out of verification. Default ``SecurityPolicy/default``: the system's
    /// certificate authorities, with certificate-chain and host-name verification on.
    public var securityPolicy: SecurityPolicy = .default
    /// Whether the session stores the cookies responses set and sends them back (see ``CookieStore``).
    /// Default `true`. A `Cookie` field of the request's own is sent instead of the store's cookies.
    public var httpShouldSetCookies: Bool = true
    /// The cookie store the session uses, or `nil` (the default) for a new in-memory store of its own.
    /// Give several sessions the same store to share cookies, or a persistent one
    /// (``CookieStore/init(persistingTo:publicSuffixes:)``) to keep them across runs. Two configurations
    /// are equal only if they hold the same store object.
    public var httpCookieStore: CookieStore? {
        get { cookieStoreBox.store }
        set { cookieStoreBox = CookieStoreBox(store: newValue) }
    }
    private var cookieStoreBox = CookieStoreBox(store: nil)
    /// An explicit proxy for every request of the session (see ``Proxy``), or `nil` (the default): then
    /// libcurl's environment variables apply — `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy`
    /// (and their uppercase forms, except `HTTP_PROXY`) — as for the `curl` tool. Checked by every task
    /// factory: with an invalid proxy (see ``Proxy/validate()``) they throw
    /// ``HeraldError/Code/invalidRequest`` and nothing is sent.
    public var proxy: Proxy?
    /// Whether a task that finds no network waits for one instead of failing: URLSession's
    /// `waitsForConnectivity`. Default `false`.
    ///
    /// With `true`, an attempt that fails before any response arrived — it could not connect, could not
    /// resolve the host, or lost the connection — while the kernel has no route for it (for a host given as
    /// an IP address or `localhost`, no route to that address; for a name, no default route through an
    /// interface that is up), does not fail the task: the task posts
    /// ``HeraldNotifications/NotificationName/taskIsWaitingForConnectivity`` (once per wait), waits until a
    /// route appears, posts ``HeraldNotifications/NotificationName/taskDidEndWaitingForConnectivity``, then
    /// makes the attempt again — still one task, one `taskDidResume`, one `taskDidComplete`. It waits at most what is left of ``timeoutIntervalForResource``, then fails with
    /// ``HeraldError/Code/timedOut``; ``SessionTask/cancel()`` ends the wait at once. A failure while a route
    /// exists (a refused connection, a name that doesn't exist) fails as without this option, and so does a
    /// lost connection of a request that is not idempotent (a `POST`, a `PATCH`): it may have reached the server
    /// whole, and is never made twice. A wait comes
    /// before an interceptor's retrier is asked: an attempt that found no network is not shown to it. The routes are
    /// watched as ``NetworkReachability`` does, from the first wait on; where the kernel refuses a routing
    /// netlink socket, tasks fail as without this option.
    public var waitsForConnectivity: Bool = false

    /// A configuration with the defaults above.
    public init() {}

    /// The defaults: the same as ``init()``.
    public static var `default`: SessionConfiguration { SessionConfiguration() }
}

/// Gives ``SessionConfiguration`` a `Hashable` stored property for its cookie store: equal when it is the same object.
private struct CookieStoreBox: Sendable, Hashable {
    var store: CookieStore?

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.store === rhs.store }

    func hash(into hasher: inout Hasher) {
        hasher.combine(store.map { ObjectIdentifier($0) })
    }
}

/// Gives ``SessionConfiguration`` a `Hashable` stored property for its cache: equal when it is the same object.
private struct ResponseCacheBox: Sendable, Hashable {
    var cache: (any ResponseCache)?

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.cache === rhs.cache }

    func hash(into hasher: inout Hasher) {
        hasher.combine(cache.map { ObjectIdentifier($0) })
    }
}
