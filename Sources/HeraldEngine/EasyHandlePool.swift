import CCurl
import HeraldNotifications

/// The easy handles of one connection pool's finished transfers, kept for its next transfers.
///
/// Only the handle of a transfer curl finished normally comes back: after a failure curl may keep state
/// that `curl_easy_reset` leaves alone (the receive buffer of a connection that failed), and then refuses
/// options such as `CURLOPT_BUFFERSIZE` on the handle.
///
/// Making an easy handle and freeing it costs more than resetting one: `curl_easy_init` allocates and
/// initialises the handle's state, `curl_easy_cleanup` frees it and its buffers. A finished transfer gives
/// its handle back here (on the loop thread: one lock and an append) with the ``EasyHandleProfile`` it was
/// configured with, and the next transfer takes both on the thread that prepares it. When its own profile is
/// the same, it sets only the options that differ for every transfer (the URL, the header list, the
/// callbacks' data); otherwise `curl_easy_reset` returns every option to its default and it sets them all.
/// Handles never move between sessions, so nothing one session's transfers left in a handle reaches another
/// session's, whose security policy may differ. At most ``capacity`` handles wait; once the pool is closed
/// every handle given back is freed.
///
/// The pool's handles share one cache of TLS sessions (``tlsSessions``, a libcurl share handle): a connection
/// any of them opens to a server resumes the session an earlier connection of the same pool negotiated with
/// it, an abbreviated handshake instead of a full one. Without it each easy handle would keep a cache of its
/// own, so a second connection opened for a burst of requests, made by another handle, would start afresh.
/// libcurl resumes a cached session only for a connection whose TLS settings match the ones it was
/// negotiated with. The cache is the pool's alone, so it never reaches another session.
package final class EasyHandlePool: @unchecked Sendable {
    // Safety: `state` is guarded by its lock; a handle in `idle` belongs to the pool alone, one taken or
    // given belongs to the caller alone; `connections` is immutable and only handed to libcurl.

    /// How many idle handles the pool keeps.
    let capacity: Int

    private struct Handle: @unchecked Sendable {
        // Safety: see the class.
        let easy: UnsafeMutableRawPointer
        let profile: EasyHandleProfile?
    }

    private struct State {
        var idle: [Handle] = []
        var isClosed = false
        /// The header list of the last transfer prepared.
        var lastHeaderList: HeaderList?
        /// The parsed URL of the last transfer prepared, without a credential or a query in it.
        var lastParsedURL: ParsedURL?
    }

    private let state = Locked(State())

    /// The share handle of the pool's TLS sessions, which every handle configured from this pool is attached to
    /// (`CURLOPT_SHARE`); `nil` when libcurl could not make one, and then each handle caches its own. libcurl
    /// locks it itself (the shim's mutexes), so it is used from any thread.
    private let tlsSessions: UnsafeMutablePointer<herald_share>?

    /// The pool's ``ConnectionTracker``, as the context of the socket callbacks every handle configured from
    /// this pool is given (``Transfer``'s configuration); `nil` for a pool whose connections nobody follows.
    /// The multi handle that owns the tracker outlives every connection its handles open.
    let connections: UnsafeMutableRawPointer?

    init(capacity: Int, connections: UnsafeMutableRawPointer? = nil) {
        self.capacity = capacity
        self.connections = connections
        self.tlsSessions = herald_share_make_tls_sessions()
    }

    deinit {
        for handle in state.withLock({ $0.idle }) { curl_easy_cleanup(handle.easy) }
        // Every other handle attached to the share belonged to a transfer, which holds the pool until it has
        // freed or given back its handle: none is left. Were one left, the share would be kept (libcurl
        // answers CURLSHE_IN_USE) rather than freed under it.
        if let tlsSessions { _ = herald_share_free(tlsSessions) }
    }

    /// The share handle to attach to a handle configured from this pool, or `nil` for none.
    var tlsSessionShare: UnsafeMutableRawPointer? {
        tlsSessions.flatMap { herald_share_handle($0) }
    }

    /// An idle handle, with the options it was last given still set, and the profile they were set from
    /// (`nil`: reset it before use); `nil` when none waits.
    func take() -> (easy: UnsafeMutableRawPointer, profile: EasyHandleProfile?)? {
        guard let handle = state.withLock({ $0.idle.popLast() }) else { return nil }
        return (handle.easy, handle.profile)
    }

    /// Takes back the handle of a finished transfer, configured from `profile` (`nil` when not from one). It
    /// must be out of its multi handle. Loop thread, where the transfer finished.
    func give(_ easy: UnsafeMutableRawPointer, profile: EasyHandleProfile?) {
        let kept = state.withLock { state -> Bool in
            guard !state.isClosed, state.idle.count < capacity else { return false }
            state.idle.append(Handle(easy: easy, profile: profile))
            return true
        }
        if !kept { curl_easy_cleanup(easy) }
    }

    /// The header list for `key`: the last one made when it has the same key, otherwise a new one, which
    /// becomes the last unless it carries a credential or cookies (kept no longer than its transfers). Any
    /// thread.
    func headerList(for key: HeaderList.Key) -> HeaderList {
        if let last = state.withLock({ $0.lastHeaderList }), last.key == key { return last }
        let list = HeaderList(key: key)
        if !key.carriesSecrets { state.withLock { $0.lastHeaderList = list } }
        return list
    }

    /// The URL `text` parsed by libcurl: the last one parsed when it has the same text, byte for byte,
    /// otherwise a new one, which becomes the last unless the URL names a user or password or has a query
    /// (which may carry a token or a signature: kept no longer than its transfers); `nil` when libcurl's
    /// parser refuses `text`. Any thread.
    ///
    /// Requests one after another to the same URL (polling, a service's one endpoint) share one parse: libcurl
    /// only copies a parsed URL's parts (when a transfer starts), never changes them.
    func parsedURL(for text: String) -> ParsedURL? {
        if let last = state.withLock({ $0.lastParsedURL }), last.text.hasSameBytes(as: text) { return last }
        guard let parsed = ParsedURL(text) else { return nil }
        if !parsed.namesCredential, !parsed.hasQuery { state.withLock { $0.lastParsedURL = parsed } }
        return parsed
    }

    /// Frees the idle handles, and from now on every handle given back.
    func close() {
        let idle = state.withLock { state -> [Handle] in
            state.isClosed = true
            defer { state.idle = [] }
            return state.idle
        }
        for handle in idle { curl_easy_cleanup(handle.easy) }
    }

    /// How many handles wait to be reused. For tests.
    var idleCount: Int { state.withLock { $0.idle.count } }
}
