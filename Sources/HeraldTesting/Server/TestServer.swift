import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP/1.1 server for tests, bound to `127.0.0.1` on a port the kernel picks.
///
/// Built on SwiftNIO (`ServerBootstrap` with `configureHTTPServerPipeline`), so requests are parsed by NIO's HTTP
/// decoder, not by hand. Start one per test, point the client at ``url(_:)``, and assert on both sides: the
/// client's view, and the server's through ``requests``, ``bodyBytesSent`` and ``waitUntil(timeout:_:)``.
///
/// ```swift
/// let server = try await TestServer.start()
/// let url = server.url("/bytes/1024?chunkSize=128")
/// // ... run the client against `url` ...
/// try await server.waitUntil { $0.requests.first?.isComplete == true }
/// #expect(server.bodyBytesSent(forPath: "/bytes/1024") == 1024)
/// try await server.shutdown()
/// ```
///
/// ## Endpoints
///
/// The path selects the behaviour and query parameters tune it. A parameter that is present but invalid gets
/// `400 Bad Request` with a one-line explanation; an unknown path gets `404 Not Found`. Every endpoint accepts any
/// method; `HEAD` gets the head alone. Connections are kept alive unless the client sends `Connection: close`.
/// A request with `Expect: 100-continue` gets an interim `100 Continue` before its final response. Every endpoint
/// reads and counts a request body (``RecordedRequest/bodyByteCount``); only `/echo` keeps it.
///
/// - `/status/{code}`: responds with status `code` (200...599) and the body `"{code} {reason}\n"` (none for 204
///   and 304). `?location=URL` adds `Location: URL` when `code` is 3xx, `?authenticate=V` adds
///   `WWW-Authenticate: V` when it is 401.
/// - `/json`: `200`, `application/json`, body `{"hello":"world","n":1}`.
///   - `?gate=K`: the first request with gate `K` waits, head and all, until ``openGate(_:)`` grants `K` a pass;
///     later requests with it are answered at once (a task suspended and started again).
/// - `/json/invalid`: `200`, `application/json`, a truncated (malformed) JSON body.
/// - `/text`: `200`, `text/plain; charset=utf-8`, body `"Hello, Herald!\n"`.
/// - `/html`: `200`, `text/html; charset=utf-8`, a small HTML document.
/// - `/empty`: `204 No Content`.
/// - `/gzip`: `200`, `text/plain; charset=utf-8`, `Content-Encoding: gzip`: the bytes ``gzipBody``, which
///   decode to ``gzipDecodedText``, whatever `Accept-Encoding` the request sent.
/// - `/echo`: `200`, `application/json`: the request as an ``EchoedRequest`` (method, target, headers, body as
///   UTF-8 or base64, body length). Bodies over 32 MiB get `413`.
/// - `/multipart`: parses a `multipart/form-data` body as it streams in (a streaming parser checked against multipart-kit's) and answers `200`
///   with an ``EchoedMultipart``: each part's name, file name, content type, headers, size and SHA-256 digest,
///   and the text of small fields. Part bodies are hashed, never kept: any size costs constant memory. A body
///   that is not `multipart/form-data` with a boundary, is malformed or ends inside a part gets `400`.
/// - `/bytes/{n}`: `n` bytes (up to 1 TiB) where byte `i` is `UInt8(i % 251)` (see ``expectedBytes(in:)``),
///   `application/octet-stream`, `Content-Length: n`, streamed with backpressure so memory stays flat.
///   - `?chunked=1`: `Transfer-Encoding: chunked` instead of `Content-Length`; one HTTP chunk per write.
///   - `?chunkSize=K`: write `K` bytes at a time (1...1 MiB, default 64 KiB).
///   - `?delayMs=D`: wait `D` ms (0...60000) between writes.
///   - `?headDelayMs=H`: send the head at once and the first body byte `H` ms (0...60000) later.
///   - `?ranges=0`: ignore `Range` and send `Accept-Ranges: none`.
///   - `?gate=K&gateAfter=B`: the body stops after `B` bytes and waits at gate `K` until ``openGate(_:)`` grants
///     it a pass; one pass lets one response go on. With `key=K2` too, only the first request with that key waits.
///   - `?key=K&dropAfter=D`: the first request with key `K` (counted per server, apart from `/flaky`'s keys)
///     gets `D` body bytes, then a normal close (FIN) short of its declared length; the later ones are served whole.
///     With `drops=N` (1...1000, default 1) the first `N` requests with the key stop so, each after the first
///     `D` bytes past the start of its range.
///   - `?key=K&changed=1`: the requests with key `K` after the first get a changed representation, with
///     `ETag: "herald-bytes-{n}-changed"`, another `Last-Modified` and byte `i` being `UInt8((i + 1) % 251)`;
///     an `If-Range` naming the first one's validator then gets the whole body with `200`.
///   - `?partialLength=L`: a `206` answer declares `Content-Length: L` (0...`Int.max`), whatever its range's size: a
///     lying server. The body sent is the range's.
///   - `?partialBody=B`: a `206` answer sends the first `B` bytes of its range, then ends its body as if whole:
///     a server that cuts its range short. Clean only where the framing allows it: with `chunked=1`, or with
///     `partialLength=B`.
///   - `?bareRanges=1`: a `206` answer carries no `ETag` or `Last-Modified` (a `200` still does).
///   - `?validators=0`: no answer carries `ETag` or `Last-Modified`, a `200` neither.
///   - `?unaskedRangeStart=S`: a request without `Range` gets a `206` of bytes `S` to the end (a broken cache or
///     proxy sending part of the representation unasked).
///   - `?early=1`: the response starts when the request's head arrives, while its body is still coming (read and
///     counted all the same), as a server that answers without waiting for the body does.
///
///   Resumption: responses carry `Accept-Ranges: bytes`, `ETag: "herald-bytes-{n}"` and a fixed `Last-Modified`.
///   A single `Range: bytes=a-b`, `bytes=a-` or `bytes=-s` gets `206 Partial Content` with `Content-Range`; a range
///   starting at or past `n` gets `416` with `Content-Range: bytes */n` and a page (`416 Range Not Satisfiable`); a
///   multi-range is ignored. `If-Range` with a validator that does not match serves the whole body with `200`.
/// - `/events/{n}`: server-sent events (`text/event-stream`, chunked): event `i` is `id: i`, `event: tick`,
///   `data: i xxx…`, from the one after the request's `Last-Event-ID` (or the first) to `n`, then the response
///   ends; a request whose `Last-Event-ID` is `n` or more gets `204 No Content`. Written with backpressure.
///   `/events/0` without `Last-Event-ID` is a stream that ends without an event (after its `retry`, if asked).
///   - `?size=S`: each `data` value is `S` bytes (1...1 MiB, default 16).
///   - `?retry=R`: each connection's stream starts with `retry: R`.
///   - `?dropEvery=K`: after `K` events on one connection, half of the next is written and the connection
///     closed mid-response (a dropped connection for reconnection tests).
///   - `?gate=K`: each response sends its head at once, then waits before its first body byte (the `retry`
///     line included) until ``openGate(_:)`` grants gate `K` a pass; one pass lets one response go on.
///     ``RecordedRequest/responseStartedAt`` tells when the head was written.
/// - `/delay/{ms}`: waits `ms` milliseconds (0...600000) on the event loop, then `200` with
///   `{"delayMilliseconds":ms}`.
/// - `/barrier/{n}?key=K`: parks the request until `n` requests with the same key `K` (default empty) are parked,
///   then answers all of them `200` with `{"released":n}`. A load test's proof that `n` requests were in flight at
///   once, without timing anything.
/// - `/redirect/{n}`: `302` with `Location: /redirect/{n-1}` (a relative reference) until `/redirect/0`, which is
///   `200` with body `"redirected\n"`. `?status=301|302|303|307|308` picks the redirect status for the whole chain.
/// - `/redirect-to?url=URL&status=S`: redirects to `URL` (required) with status `S` (300...399, default 302).
/// - `/headers?Name=value&...`: `200` with each query parameter added as a response header (a name may repeat)
///   and a JSON body of them; framing headers (`Content-Length`, `Transfer-Encoding`, `Connection`) are ignored,
///   a query-supplied `Content-Type` replaces the default. When the fields include `ETag` and the request's
///   `If-None-Match` names it (or is `*`), the answer is `304 Not Modified` with the same fields and no body.
/// - `/headers/not-modified?Name=value&...`: as `/headers`, but any request with a conditional field
///   (`If-None-Match`, `If-Modified-Since`) is answered `304` with the query's fields, whatever they name: a
///   server that confirms a representation other than the one asked about.
/// - `/auth/basic?user=U&password=P`: `200` with `{"authenticated":true,"user":U}` if the request carries
///   `Authorization: Basic base64(U:P)`, otherwise `401` with `WWW-Authenticate: Basic realm="herald"`. With
///   `&redirect=URL`, a request carrying the right credential gets `302` to `URL` instead of the `200`; with
///   `&alsoOffer=V`, the `401` offers the challenge `V` first, in a `WWW-Authenticate` field of its own; with
///   `&login=1`, a request without the right credential gets `302` to its login page instead of the `401`: the
///   same route without `login`, whose `redirect` sends the visitor back once the challenge is answered.
/// - `/flaky?key=K&fail=N&status=S&retry-after=V&www-authenticate=W`: the first `N` requests (default 1) with key
///   `K` get status `S` (default 503, with `Retry-After: V` and `WWW-Authenticate: W` when given), the later ones
///   `200` with `{"attempt":n,"key":K}`. With `early=1`, the answer is written when the request's head arrives,
///   while its body is still coming.
/// - `/login?value=V&redirect=URL&cookie=C`: `302` to `URL` (default `/account`) with
///   `Set-Cookie: session=V; Path=/; HttpOnly` (default `V` is `s3cr3t`) and each `cookie=C` as another `Set-Cookie`.
/// - `/account`: `200` with `{"cookie":"…"}` (the request's `Cookie`) when it has a `session` cookie, else `403`;
///   with `?login=1`, else `302` to `/login`, which sets the cookie and redirects back.
/// - `/auth/digest?user=U&password=P`: RFC 7616 Digest (`MD5`, `qop="auth"`, realm `herald-digest`), checked
///   server-side: `200` with `{"authenticated":true,"user":U}` for a correct `Authorization: Digest …`,
///   otherwise `401` with a fresh nonce. With `&cookie=NAME`, each `401` also sets the cookie `NAME` to its
///   nonce, and the `200` says which nonce the answer used (`"nonce"`).
///
/// ## Faults
///
/// - `/fault/reset-before-headers`: closes the connection with a TCP RST before writing anything.
/// - `/fault/reset-when-reused`: the first request on a connection gets `200` `ok` and the connection is kept
///   alive; a later one on it is answered with a TCP RST before anything is written, as by a server whose
///   keep-alive timeout ran out just as the request arrived. `?firstDelayMs=D` delays the first request's answer
///   `D` ms, `?resetAfterMs=R` a later one's reset `R` ms (0...60000, default 0). With `&close=1` a later request
///   is answered with a normal close (FIN) instead of a reset: the whole request read, no answer written.
/// - `/fault/reset-mid-body?bytes=N&declared=D`: `200` with `Content-Length: D` (default `N + 1024`), then `N`
///   pattern bytes (default 1024), then a TCP RST.
/// - `/fault/stall`: reads the request and never answers, until the client disconnects or the server shuts down.
/// - `/fault/truncated?declared=N&sent=M`: `200` with `Content-Length: N` (default 100), `M < N` pattern bytes
///   (default `N / 2`), then a normal close (FIN). With `&gzip=1` (`N` at most 16 MiB) the body is the gzip
///   encoding of `N` pattern bytes in stored blocks, which decode as they arrive (`Content-Encoding: gzip`,
///   `ETag: "gzip-N"`, `Content-Length` the encoding's), and `M` counts the encoding's bytes sent.
/// - `/fault/bad-chunked`: a `Transfer-Encoding: chunked` head, one valid chunk (`hello`), then chunk framing that is
///   not hexadecimal, then a close. Written raw, so it counts in ``bytesSent`` but not ``bodyBytesSent``.
/// - `/fault/garbage-status?line=L`: writes exactly `L\r\n\r\n` instead of a status line (default `HELLO`; a
///   malformed one such as `HTTP/1.1 abc` or `HTTP/9.9 200 OK` works too), then closes.
/// - `/fault/huge-header?bytes=N&lines=K`: `200` whose head carries `K` fields `X-Huge-0` … `X-Huge-{K-1}` (default
///   1) with values of `h` adding up to `N` bytes (default 1 MiB, at most 16 MiB), then the body `ok\n` and a close.
/// - `/fault/two-lengths?first=N&second=M`: a `200` written raw with two `Content-Length` fields, `N` (default
///   100) then `M` (default 2), and the body `hi`, then the connection closes.
/// - `/fault/raw-headers`: a `200` written raw with header values that are not UTF-8 (`X-Latin1: caf\xE9`,
///   `X-Invalid: a\xFF\xFE\x80b`), a field repeated in three spellings (`X-Dup`, `x-dup`, `X-DUP`), two
///   `Set-Cookie` fields, a field folded over three lines (`X-Folded`), the body `ok\n`, then a close.
/// - `/fault/trailers?bytes=N`: a chunked `200` whose body is `hello`, followed by a trailer field `X-Trailer` of `N`
///   bytes (default 100, up to the huge-header maximum), then the connection closes. `&empty=1`: the body is
///   empty, the trailer right after the head.
/// - `/fault/forged-status-lines`: a chunked `200` whose head holds lines that look like status lines
///   (`HTTP/1.1 500 Forged: x`, `HTTP/a1 404 x: y`) among its fields (`X-Real: yes`), and whose trailer starts with
///   one (`HTTP/1.1 503 Trailer: x`, then `Set-Cookie: forged=1`); the body is `hello`, then the connection closes.
/// - `/fault/redirect-loop`: `302` with `Location: /fault/redirect-loop`, forever; the connection is kept alive.
/// - `/fault/early-close?status=S&bodyDelayMs=D`: answered when the request's head arrives, while its body is still
///   coming: a head of status `S` (300...599, default 413) with `Connection: close` and no length, then, `D` ms
///   later (default 100), a body `refused\n` and the close that ends it.
public final class TestServer: Sendable {
    private let channel: any Channel
    let recorder: RequestRecorder
    private let gates: GateRegistry

    /// The TCP port the server listens on; never 0.
    public let port: Int

    /// The server's root, `http://127.0.0.1:{port}`.
    public let baseURL: URL

    private init(channel: any Channel, recorder: RequestRecorder, gates: GateRegistry, port: Int) {
        self.channel = channel
        self.recorder = recorder
        self.gates = gates
        self.port = port
        // Safe to force: a dotted IPv4 literal and a decimal port always form a valid URL.
        self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    deinit {
        // A safety net for a test that forgot shutdown(): stop listening, without waiting.
        channel.close(promise: nil)
    }

    /// Starts a server listening on `127.0.0.1` at a port chosen by the kernel.
    ///
    /// - Parameters:
    ///   - group: The event loop group that runs the server. The default, NIO's shared singleton group, is never
    ///     shut down; the server only closes its own channels.
    ///   - backlog: The listen backlog (capped by the kernel's `somaxconn`). Raise it for load tests that open
    ///     thousands of connections at once, so that connects are not dropped and retried a second later.
    ///   - host: The loopback address to listen on: `127.0.0.1`, or `::1` for a server that a client reaching
    ///     `localhost` finds only over IPv6. ``url(_:)`` names 127.0.0.1 whatever it is.
    /// - Returns: A running server. Call ``shutdown()`` when done.
    /// - Throws: An error from NIO if the socket cannot be bound.
    public static func start(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, backlog: Int = 256,
        host: String = "127.0.0.1"
    ) async throws -> TestServer {
        let recorder = RequestRecorder()
        let barriers = BarrierRegistry()
        let gates = GateRegistry()
        let counters = RequestCounters()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: Int32(clamping: backlog))
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard recorder.connectionOpened(channel) else { throw TestServerError.shutDown }
                    channel.closeFuture.whenComplete { _ in recorder.connectionClosed(channel) }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(ByteCountingHandler(recorder: recorder))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(
                        TestServerHandler(recorder: recorder, barriers: barriers, gates: gates, counters: counters))
                }
            }
            .bind(host: host, port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw TestServerError.shutDown
        }
        return TestServer(channel: channel, recorder: recorder, gates: gates, port: port)
    }

    /// Returns the URL of `pathAndQuery` on this server, for example `server.url("/status/500")`.
    ///
    /// - Parameter pathAndQuery: A path starting with `/`, optionally followed by `?query`. Characters not allowed
    ///   in a URL are percent-encoded.
    /// - Returns: `baseURL` followed by `pathAndQuery`.
    public func url(_ pathAndQuery: String) -> URL {
        Self.url(pathAndQuery, on: baseURL)
    }

    /// `base` followed by `pathAndQuery`, percent-encoded where it would not otherwise make a URL.
    static func url(_ pathAndQuery: String, on base: URL) -> URL {
        if let url = URL(string: base.absoluteString + pathAndQuery) { return url }
        let encoded = pathAndQuery.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""
        return URL(string: base.absoluteString + encoded) ?? base
    }

    /// Lets one response waiting at gate `key` (`/events/{n}?gate=K`) send its body, or, when none waits yet,
    /// the next one to arrive there.
    ///
    /// - Parameter key: The gate's key, the `gate` parameter of the requests.
    public func openGate(_ key: String) {
        gates.open(key: key)
    }

    /// Stops listening and closes every open connection, including stalled ones.
    ///
    /// Returns once all channels are closed. Calling it again does nothing.
    ///
    /// - Throws: An error from NIO if the listening socket fails to close.
    public func shutdown() async throws {
        let connections = recorder.beginShutdown()
        do {
            try await channel.close()
        } catch ChannelError.alreadyClosed {
            // Already shut down.
        }
        for connection in connections {
            connection.close(promise: nil)
            try? await connection.closeFuture.get()
        }
    }
}
