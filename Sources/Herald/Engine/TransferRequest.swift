import Foundation

/// Everything the engine needs to configure one curl easy handle, captured when a task first resumes.
struct TransferRequest: Sendable {
    var url: URL
    var method: String
    var headers: HTTPHeaders
    var body: TransferBody?
    /// Where the response body goes.
    var sink: TransferSink = .memory
    /// Idle timeout: the transfer fails with `timedOut` when no byte moves for this long (0 = none).
    var requestTimeout: TimeInterval
    /// Whole-transfer timeout, including time spent suspended (0 = none).
    var resourceTimeout: TimeInterval
    var httpVersion: HTTPVersion
    /// The schemes curl may use, comma-separated (curl's `PROTOCOLS_STR` form), such as `"http,https"`.
    var allowedProtocols: String
    var followsRedirects: Bool
    var maximumRedirects: Int
    /// The most body bytes collected for a `.memory` sink (0 = no limit); file sinks are not limited.
    var maximumResponseSize: Int = 0
    /// The most bytes in one response head (0 = no limit of Herald's; curl keeps its own).
    var maximumHeaderSize: Int = 0
    /// Whether the transfer waits, paused, for the task's answer to the final response before its body
    /// (or, without a body, its completion) — set when the session has a `dataTaskDidReceiveResponse` hook.
    var asksForResponseDisposition = false
    /// Whether each body chunk is handed to the delegate — set when the session has a
    /// `dataTaskDidReceiveData` hook, so that without one the write callback does no extra work.
    var forwardsBodyChunks = false
    /// Whether the request carries validators of a stale cache entry: a `304` answers the cache, not the
    /// task, so it is not presented for a disposition.
    var revalidatesCachedResponse = false
    /// The credential libcurl answers the server's challenge with (`CURLOPT_USERNAME`/`PASSWORD` and
    /// `HTTPAUTH`), set by an authentication round-trip; dropped on a hop to another origin.
    var credential: TransferCredential?
    /// The `Cookie` field from the session's cookie store for this hop's URL, sent unless `headers` has a
    /// `Cookie` of the caller's.
    var cookieHeader: String?
    /// The session's explicit proxy; `nil` leaves libcurl to its environment variables.
    var proxy: Proxy?

    /// Whether a final response with `status` waits for the task's disposition. A redirect Herald is
    /// about to follow is not final: it is not presented (as URLSession presents only the last response).
    func asksForDisposition(status: Int, headers: HTTPHeaders) -> Bool {
        asksForResponseDisposition && status >= 200 && !(revalidatesCachedResponse && status == 304)
            && !leadsToNextHop(status: status, headers: headers)
    }

    /// Whether a response with `status` and `headers` is one Herald follows with another transfer (a
    /// redirect), so its body is not the task's and is not forwarded to body hooks.
    func leadsToNextHop(status: Int, headers: HTTPHeaders) -> Bool {
        // A 401 is not excluded: most are delivered (no credential), and hooks must see those.
        followsRedirects && RedirectRules.isRedirect(status) && headers["Location"] != nil
    }
    /// Which servers' certificates to trust (see `Transfer+Security.swift`).
    var securityPolicy: SecurityPolicy = .default
}

/// What the engine tells the task that owns a transfer. Called on the engine's loop thread.
protocol TransferDelegate: AnyObject, Sendable {
    /// The response head arrived: this transfer's last one (a redirect or a 401 that Herald answers ends
    /// the transfer; the next hop is a new one).
    func transferDidReceiveResponse(_ response: HTTPResponse)
    /// Body bytes arrived; `expected` is the declared total when known.
    func transferDidReceiveBytes(total received: Int64, expected: Int64?)
    /// The final response head arrived and the transfer is paused until ``Transfer/allowResponse()``,
    /// ``Transfer/becomeDownload(sink:delegate:)`` or a removal answers it (only when
    /// ``TransferRequest/asksForResponseDisposition``).
    func transferNeedsResponseDisposition(_ response: HTTPResponse, transfer: Transfer)
    /// Body bytes arrived, exactly as stored (only when ``TransferRequest/forwardsBodyChunks``); valid
    /// during the call only.
    func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer)
    /// Request body bytes were sent; `expected` is the body's length when known.
    func transferDidSendBytes(total sent: Int64, expected: Int64?)
    /// What follows the transfer's end (cookies, the next hop, a retry, completing the task), exactly once
    /// per transfer, on the loop thread, whatever the outcome and however many transfers are in flight. It
    /// must run no user code and never wait: a hook or a handler it needs goes to a queue of its own.
    func proceed(after outcome: TransferOutcome)
}

/// How a transfer ended.
///
/// The fields live in one copy-on-write box: an outcome is about 370 bytes, and on its way from the loop
/// thread through the task's state machine to the completion handler it is copied about a dozen times
/// (into closures, effects, the task's transition). A copy of the box is one retain; only a write to an
/// outcome that shares its box copies the fields.
struct TransferOutcome: Sendable {
    private var box: Box

    init(
        response: HTTPResponse?, body: Data, file: DownloadedFile? = nil, error: HeraldError?,
        metrics: TransferMetrics?, isFromCache: Bool = false
    ) {
        box = Box(
            Fields(
                response: response, body: body, file: file, error: error, metrics: metrics,
                isFromCache: isFromCache))
    }

    /// An empty outcome whose box the calling thread allocates now, for
    /// ``fill(response:body:file:error:metrics:)`` to write into later, on the loop thread.
    /// Made by the thread that prepares the transfer (the one calling `resume()`, often the completion
    /// queue's, where the outcome is released again), so the box isn't memory of the loop thread's arena
    /// that another thread frees (see `LoopThreadFrees`). About 400 bytes held from then on.
    static func reserved() -> TransferOutcome {
        TransferOutcome(response: nil, body: Data(), error: nil, metrics: nil)
    }

    /// Sets every field of a finished transfer, in this outcome's own box when no other outcome shares it.
    mutating func fill(
        response: HTTPResponse?, body: Data, file: DownloadedFile?, error: HeraldError?, metrics: TransferMetrics?
    ) {
        uniqueBox().fields = Fields(
            response: response, body: body, file: file, error: error, metrics: metrics, isFromCache: false)
    }

    var response: HTTPResponse? {
        get { box.fields.response }
        _modify { yield &uniqueBox().fields.response }
    }
    /// The body collected in memory; empty for downloads.
    var body: Data {
        get { box.fields.body }
        _modify { yield &uniqueBox().fields.body }
    }
    /// The file the body was written to, for downloads.
    var file: DownloadedFile? {
        get { box.fields.file }
        _modify { yield &uniqueBox().fields.file }
    }
    var error: HeraldError? {
        get { box.fields.error }
        _modify { yield &uniqueBox().fields.error }
    }
    var metrics: TransferMetrics? {
        get { box.fields.metrics }
        _modify { yield &uniqueBox().fields.metrics }
    }
    /// Whether the response came from the session's response cache instead of the network.
    var isFromCache: Bool {
        get { box.fields.isFromCache }
        _modify { yield &uniqueBox().fields.isFromCache }
    }

    /// The box, copied first if another outcome shares it.
    private mutating func uniqueBox() -> Box {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return box
    }

    private struct Fields {
        var response: HTTPResponse?
        var body: Data
        var file: DownloadedFile?
        var error: HeraldError?
        var metrics: TransferMetrics?
        var isFromCache: Bool
    }

    private final class Box: @unchecked Sendable {
        // Safety: a box is only written through `uniqueBox()`, when the outcome writing it holds the only
        // reference; a box that two outcomes (or two threads) read is never written, only copied.
        @exclusivity(unchecked) var fields: Fields

        init(_ fields: Fields) { self.fields = fields }
    }
}

/// A credential for one transfer and the scheme to answer with.
struct TransferCredential: Sendable {
    var credential: Credential
    var scheme: AuthenticationScheme
}
