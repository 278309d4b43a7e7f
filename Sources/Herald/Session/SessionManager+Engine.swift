import Foundation
import HeraldEngine

// The session's side of the engine: the commands its tasks send, the transfer requests it builds from a
// task's request and its configuration, and two test-only probes.
extension SessionManager {
    /// Waits until the engine has run every command enqueued before this call. For tests: `package`, so the
    /// package's test targets and `HeraldTesting` can reach it and users of the library can't.
    package func engineBarrier() async {
        await withCheckedContinuation { continuation in engine.execute { continuation.resume() } }
    }

    /// The number of transfers and polled sockets in this session's pool, how many times a socket started
    /// being polled, and how many of those opened a new libuv poll handle; read on the loop thread. For
    /// tests: `package`, like `engineBarrier()`.
    package func poolCounts() async -> (transfers: Int, sockets: Int, socketsWatched: Int, pollHandlesOpened: Int) {
        guard let multi else { return (0, 0, 0, 0) }
        return await withCheckedContinuation { continuation in
            engine.execute {
                continuation.resume(
                    returning: (
                        multi.activeTransferCount, multi.pollCount, multi.socketsWatched, multi.pollHandlesOpened
                    ))
            }
        }
    }

    /// Has the engine carry out `command` on this session's connection pool, on its loop thread, after every
    /// command sent before it.
    func send(_ command: TransferCommand) {
        guard let multi else { return }
        engine.execute(command, on: multi)
    }

    /// Runs one of the library's blocks (a progress or body hook, a handler of the library's) on the
    /// completion queue, in ``completionGroup``. Nothing the transport waits for goes this way.
    func runOnCompletionQueue(_ work: @escaping @Sendable () -> Void) {
        completionQueue.async(group: completionGroup, execute: work)
    }

    func transferRequest(
        for request: Request, body: TransferBody?, sink: TransferSink = .memory
    ) -> TransferRequest {
        let headers =
            request.headers.count == 0
            ? defaultRequestHeaders
            : Self.requestHeaders(request.headers, adding: configuration.httpAdditionalHeaders).engineFields
        return TransferRequest(
            url: request.url, method: request.method, headers: headers, body: body, sink: sink,
            requestTimeout: request.timeoutInterval ?? configuration.timeoutIntervalForRequest,
            resourceTimeout: configuration.timeoutIntervalForResource,
            httpVersion: configuration.httpVersion.engineVersion,
            allowedProtocols: allowedProtocolList,
            followsRedirects: configuration.followsRedirects,
            maximumRedirects: configuration.maximumRedirects,
            maximumResponseSize: configuration.maximumResponseSize,
            maximumHeaderSize: configuration.maximumHeaderSize,
            trust: configuration.securityPolicy.trustSettings)
    }

    /// `request` with the header fields its transfer adds (``SessionConfiguration/httpAdditionalHeaders``,
    /// `User-Agent`, `Accept-Language`), for the response cache's rules: a stored response varies on, and is kept
    /// from, what was sent, not only what the caller wrote.
    func requestAsSent(_ request: Request) -> Request {
        var sent = request
        sent.headers = Self.requestHeaders(request.headers, adding: configuration.httpAdditionalHeaders)
        return sent
    }

    /// The fields that frame a request body, which libcurl sets from the body itself.
    static let framingHeaders = ["Content-Length", "Transfer-Encoding"]

    private static func isFraming(_ name: String) -> Bool {
        // Most names differ in length from both: no comparison for them.
        let length = name.utf8.count
        guard length == 14 || length == 17 else { return false }
        return framingHeaders.contains { $0.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// `own` followed by each of `additional`'s fields whose name `own` doesn't have (all of a name repeated in
    /// `additional`), then `User-Agent` and
    /// `Accept-Language` from ``DefaultHeaders`` when neither list has them; neither list's `Content-Length` or
    /// `Transfer-Encoding` (the engine frames the body).
    static func requestHeaders(_ own: HTTPHeaders, adding additional: HTTPHeaders) -> HTTPHeaders {
        var headers = own
        // The body's framing is the engine's: a Content-Length or Transfer-Encoding of the caller's beside
        // libcurl's would make the server read the body, and the next request on the connection, wrongly.
        for name in framingHeaders where headers.contains(name) { headers.remove(name: name) }
        headers.reserveCapacity(own.count + additional.count + 2)
        for field in additional where !own.contains(field.name) && !Self.isFraming(field.name) {
            headers.add(name: field.name, value: field.value)
        }
        if !headers.contains("User-Agent") { headers.add(name: "User-Agent", value: DefaultHeaders.userAgent) }
        if !headers.contains("Accept-Language") {
            headers.add(name: "Accept-Language", value: DefaultHeaders.acceptLanguage)
        }
        return headers
    }
}
