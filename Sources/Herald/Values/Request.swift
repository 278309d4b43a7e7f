import Foundation
import Instrumentation

/// An HTTP request: URL, method, header fields and an optional in-memory body.
///
/// A task made from it belongs to a trace: ``serviceContext`` when set, otherwise the task-local
/// `ServiceContext.current` of the code that creates the task. That context travels with the task; see
/// ``serviceContext``.
///
/// Validated when a task is created (``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``):
/// a URL without a host, a scheme the session does not allow, a method that is not an HTTP token, a header
/// name that is not one, a header value containing a control character other than tab (CR, LF and NUL
/// among them), or a `HEAD` with a body is refused with a ``HeraldError`` before any byte is sent.
public struct Request: Sendable {
    /// The fields, in one reference-counted box shared by copies until one of them is changed (as `Array`
    /// does): a task copies its request several times on the way to the wire, and a copy is then one
    /// reference instead of one per field.
    private var storage: Storage

    /// The URL to request.
    public var url: URL {
        get { storage.url }
        _modify { yield &uniqueStorage().url }
    }
    /// The HTTP method, such as `"GET"` or `"POST"`; case-sensitive, as HTTP methods are.
    public var method: String {
        get { storage.method }
        _modify { yield &uniqueStorage().method }
    }
    /// The header fields, sent in order, before the session's additional headers whose names they don't have.
    /// `Content-Length` and `Transfer-Encoding` are the body's to say and are not sent from here: libcurl frames
    /// the body itself (a streamed upload's declared length is the exception, see
    /// ``SessionManager/uploadTask(withStreamedRequest:bodyProvider:progress:completionHandler:)``).
    public var headers: HTTPHeaders {
        get { storage.headers }
        _modify { yield &uniqueStorage().headers }
    }
    /// The body sent with the request, if any. Its length is sent as `Content-Length`.
    public var body: Data? {
        get { storage.body }
        _modify { yield &uniqueStorage().body }
    }
    /// The idle timeout for this request in seconds, overriding the session's
    /// ``SessionConfiguration/timeoutIntervalForRequest`` when set; 0 means none. A negative value or NaN (a
    /// deadline already passed, as `deadline.timeIntervalSinceNow`) is refused with
    /// ``HeraldError/Code/invalidRequest`` when a task is made from the request.
    public var timeoutInterval: TimeInterval? {
        get { storage.timeoutInterval }
        _modify { yield &uniqueStorage().timeoutInterval }
    }
    /// The trace context the task belongs to, overriding the task-local `ServiceContext.current` of the code
    /// that creates the task; `nil` (the default) takes that one.
    ///
    /// Herald reads the context once, when the task is created, and then:
    /// - asks the instrument in effect at that moment (`InstrumentationSystem.instrument`: the bootstrapped
    ///   one, or the one a `withTracer` scope binds) to inject it into header fields — with a W3C
    ///   propagator, `traceparent` and `tracestate` — and sends those fields on **every** transfer the task
    ///   runs: the first request, each redirect followed and each authentication round-trip. They replace
    ///   fields of the same names in ``headers``;
    /// - puts it in every notification's ``RequestSummary/serviceContext``, so that observers running on
    ///   the session's event queue (HeraldObservers' `TracingObserver` and `LoggingObserver`) parent their
    ///   spans and tag their log lines with it.
    ///
    /// Herald starts no span of its own. The `traceparent` sent names the span of this context, so the
    /// server's span is a child of the caller's span (a sibling of `TracingObserver`'s client span) — unless
    /// the context is the client span's own, as in a request made by HeraldObservers'
    /// `TracingObserver.startSpan(for:)`: the server's span is then the client span's child.
    /// Not part of the request's identity: ``==(_:_:)`` and ``hash(into:)`` ignore it.
    public var serviceContext: ServiceContext? {
        get { storage.serviceContext }
        _modify { yield &uniqueStorage().serviceContext }
    }

    /// Creates a request.
    /// - Parameters:
    ///   - url: The URL to request.
    ///   - method: The HTTP method; default `"GET"`.
    ///   - headers: Header fields; default none.
    ///   - body: An in-memory body; default none.
    ///   - timeoutInterval: An idle timeout overriding the session's; default none.
    ///   - serviceContext: The trace context of the task made from it; default `nil`, the creator's
    ///     task-local `ServiceContext.current`.
    public init(
        url: URL, method: String = "GET", headers: HTTPHeaders = [:], body: Data? = nil,
        timeoutInterval: TimeInterval? = nil, serviceContext: ServiceContext? = nil
    ) {
        storage = Storage(
            url: url, method: method, headers: headers, body: body, timeoutInterval: timeoutInterval,
            serviceContext: serviceContext)
    }

    /// The box, copied first if another request shares it.
    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// A request's fields.
    private final class Storage: @unchecked Sendable {
        // Safety: a box is only written through `uniqueStorage()`, when the request writing it holds the
        // only reference; a box that two requests (or two threads) share is never written, only copied.
        @exclusivity(unchecked) var url: URL
        @exclusivity(unchecked) var method: String
        @exclusivity(unchecked) var headers: HTTPHeaders
        @exclusivity(unchecked) var body: Data?
        @exclusivity(unchecked) var timeoutInterval: TimeInterval?
        @exclusivity(unchecked) var serviceContext: ServiceContext?

        init(
            url: URL, method: String, headers: HTTPHeaders, body: Data?, timeoutInterval: TimeInterval?,
            serviceContext: ServiceContext?
        ) {
            self.url = url
            self.method = method
            self.headers = headers
            self.body = body
            self.timeoutInterval = timeoutInterval
            self.serviceContext = serviceContext
        }

        func copy() -> Storage {
            Storage(
                url: url, method: method, headers: headers, body: body, timeoutInterval: timeoutInterval,
                serviceContext: serviceContext)
        }
    }
}

extension Request: CustomReflectable {
    /// The request's fields, so that `print`, `String(describing:)` and `dump` show them as they would for a
    /// struct storing them directly, not the box that holds them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "url": url, "method": method, "headers": headers, "body": body as Any,
                "timeoutInterval": timeoutInterval as Any, "serviceContext": serviceContext as Any,
            ],
            displayStyle: .struct)
    }
}

extension Request: Hashable {
    /// Whether two requests send the same thing: URL, method, headers, body and timeout. The
    /// ``serviceContext`` is not compared (a context is not `Equatable`, and it does not change what is sent
    /// but for the trace headers).
    /// - Parameters:
    ///   - lhs: A request.
    ///   - rhs: Another request.
    /// - Returns: `true` when every compared field is equal.
    public static func == (lhs: Request, rhs: Request) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method && lhs.headers == rhs.headers && lhs.body == rhs.body
            && lhs.timeoutInterval == rhs.timeoutInterval
    }

    /// Hashes the fields ``==(_:_:)`` compares.
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(method)
        hasher.combine(headers)
        hasher.combine(body)
        hasher.combine(timeoutInterval)
    }
}

extension Request {
    /// Checks what a server must never receive malformed: the URL, the method and every header field.
    func validate(allowedProtocols: Set<String>) throws(HeraldError) {
        guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else {
            throw HeraldError(.badURL, "The URL has no scheme.", url: url)
        }
        // A session allows a few schemes (two by default): comparing a short string with each is a fraction
        // of hashing it, and this runs for every request.
        let allowed =
            allowedProtocols.count <= 4 ? allowedProtocols.contains { $0 == scheme } : allowedProtocols.contains(scheme)
        guard allowed else {
            throw HeraldError(.unsupportedURL, "The URL scheme '\(scheme)' is not allowed by this session.", url: url)
        }
        // Percent-encoded: whether the host is empty doesn't depend on decoding it, which costs more than
        // the rest of this check.
        guard let host = url.host(percentEncoded: true), !host.isEmpty else {
            throw HeraldError(.badURL, "The URL has no host.", url: url)
        }
        // `file://localhost/…` has one, and libcurl would read the local file.
        guard scheme != "file" else {
            throw HeraldError(.badURL, "A file: URL names a local file, which a session never reads.", url: url)
        }
        guard !Self.containsLineBreakOrNUL(url.absoluteString) else {
            throw HeraldError(.badURL, "The URL contains CR, LF or NUL.", url: url)
        }
        guard Self.isToken(method) else {
            throw HeraldError(.invalidRequest, "The method '\(method)' is not an HTTP token.", url: url)
        }
        // libcurl sends a HEAD without any body: refused rather than dropped.
        if method == "HEAD", let body, !body.isEmpty {
            throw HeraldError(.invalidRequest, "A HEAD request has no body; send one with another method.", url: url)
        }
        if let timeoutInterval, timeoutInterval.isNaN || timeoutInterval < 0 {
            throw HeraldError(
                .invalidRequest,
                "The request's timeoutInterval is \(timeoutInterval): 0 (none) or a number of seconds.", url: url)
        }
        for field in headers {
            guard Self.isToken(field.name) else {
                throw HeraldError(.invalidRequest, "The header name '\(field.name)' is not an HTTP token.", url: url)
            }
            guard !Self.containsControlCharacter(field.value) else {
                throw HeraldError(
                    .invalidRequest,
                    "The value of header '\(field.name)' contains a control character (CR, LF, NUL, or another "
                        + "than tab).", url: url)
            }
        }
    }

    /// Whether `name: value` can be sent as it is: the name an HTTP token, the value free of control characters
    /// other than tab (RFC 9110 `field-value`: CR, LF and NUL would split or end the request, and the rest are
    /// refused by strict servers with a `400`).
    static func isValidField(name: String, value: String) -> Bool {
        isToken(name) && !containsControlCharacter(value)
    }

    /// Whether `text` contains a byte below 0x20 other than tab, or DEL (0x7F).
    static func containsControlCharacter(_ text: String) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        return containsByte(
            in: text,
            // A word with no byte below 0x20 and none equal to 0x7F holds none (a tab is below 0x20 and allowed,
            // so such a word is looked at byte by byte).
            wordMayHold: { word in
                (word &- ones &* 0x20) & ~word & (ones &* 0x80) != 0 || hasZeroByte(word ^ (ones &* 0x7F))
            },
            isMatch: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F })
    }

    /// Whether `text` contains CR, LF or NUL. This runs for the URL and every header value of every request.
    static func containsLineBreakOrNUL(_ text: String) -> Bool {
        containsByte(in: text, wordMayHold: holdsLineBreakOrNUL, isMatch: isLineBreakOrNUL)
    }

    /// Whether `bytes` contain CR, LF or NUL.
    static func containsLineBreakOrNUL(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        containsByte(in: bytes, wordMayHold: holdsLineBreakOrNUL, isMatch: isLineBreakOrNUL)
    }

    private static func isLineBreakOrNUL(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0x00 }

    /// Whether the word holds CR, LF or NUL (exact).
    private static func holdsLineBreakOrNUL(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        return hasZeroByte(word) || hasZeroByte(word ^ (ones &* 0x0A)) || hasZeroByte(word ^ (ones &* 0x0D))
    }

    /// Whether any byte of `text` `isMatch`: a native string's bytes eight at a time, others one by one.
    @inline(__always)
    private static func containsByte(
        in text: String, wordMayHold: (UInt64) -> Bool, isMatch: (UInt8) -> Bool
    ) -> Bool {
        if let found = text.utf8.withContiguousStorageIfAvailable({
            containsByte(in: $0, wordMayHold: wordMayHold, isMatch: isMatch)
        }) {
            return found
        }
        return text.utf8.contains(where: isMatch)
    }

    /// Whether any of `bytes` `isMatch`, eight at a time: a word `wordMayHold` says holds no match is skipped
    /// whole, any other is looked at byte by byte.
    @inline(__always)
    private static func containsByte(
        in bytes: UnsafeBufferPointer<UInt8>, wordMayHold: (UInt64) -> Bool, isMatch: (UInt8) -> Bool
    ) -> Bool {
        var index = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index + 8 <= bytes.count {
                if wordMayHold(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                    for offset in 0..<8 where isMatch(bytes[index + offset]) { return true }
                }
                index += 8
            }
        }
        while index < bytes.count {
            if isMatch(bytes[index]) { return true }
            index += 1
        }
        return false
    }

    /// Whether any of the word's eight bytes is zero (exact: the borrow never reaches a byte above a zero
    /// one unless that byte is zero as well).
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
    }

    /// Whether `text` is a non-empty RFC 9110 token.
    static func isToken(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        for byte in text.utf8 where !isTokenCharacter(byte) { return false }
        return true
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
