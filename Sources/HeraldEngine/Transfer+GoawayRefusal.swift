import CCurl

/// What libcurl 7.88.1's informational text (`CURLOPT_DEBUGFUNCTION`, `CURLINFO_TEXT`) says of a transfer's
/// HTTP/2 stream and of a GOAWAY on its connection: whether a GOAWAY named a last stream below the one the
/// request went out on, so that the server did not process it (RFC 9113 §6.8).
///
/// That is the one proof of a refusal libcurl 7.88.1 gives. When the refused stream was the only one open it
/// fails the transfer with `CURLE_HTTP2` and no error text, the same result as a stream that ended in error
/// for any other reason once a GOAWAY arrived, processed or not; no `CURLINFO` value holds the stream or the
/// GOAWAY. Its text does, to the transfer's own debug callback: "Using Stream ID: 3 (easy handle 0x…)" when
/// the request's HEADERS are submitted on a connection already speaking HTTP/2 (not for stream 1 of an h2c
/// upgrade), and "recveived GOAWAY, error=0, last_stream=1" (sic) when that connection reads the frame for
/// this transfer. nghttp2 then closes every stream above the last one with `REFUSED_STREAM`.
///
/// A GOAWAY counts only after the stream it follows, and libcurl's own retry ("Connection died, …") forgets
/// both: the request may go out again on another connection. Whether that resend follows a refusal (a GOAWAY
/// so read, or libcurl's "REFUSED_STREAM, retrying a fresh connect" just before) is kept for it: only then may a
/// request that is not idempotent go out again (see `ConnectionTracker`'s pre-request callback).
struct GoawayRefusalWatch {
    /// The stream libcurl last opened for the request.
    private(set) var stream: UInt32?
    /// Whether a GOAWAY read since named a last stream below ``stream``.
    private(set) var refusedStream = false
    /// Whether libcurl's latest resend of the request on a fresh connection follows a refusal of its stream (a
    /// GOAWAY naming an earlier last stream, or `REFUSED_STREAM`): the server did not process it.
    private(set) var resendFollowsRefusal = false
    /// Whether libcurl said the stream was refused (`REFUSED_STREAM`), just before it says it resends.
    private var refusalAnnounced = false

    /// Reads one message of libcurl's informational text; the last stream a GOAWAY in it named, if it was one.
    @discardableResult
    mutating func read(_ text: UnsafeRawBufferPointer) -> UInt32? {
        if let opened = Self.number(in: text, after: Self.streamPrefix, before: Self.streamSuffix, exact: false) {
            stream = opened
            refusedStream = false
        } else if let last = Self.goawayLastStream(in: text) {
            goawayArrived(lastStream: last)
            return last
        } else if Self.hasPrefix(text, Self.retryPrefix) {
            let refused = refusedStream || refusalAnnounced
            self = GoawayRefusalWatch()
            resendFollowsRefusal = refused
        } else if Self.hasPrefix(text, Self.refusedStreamPrefix) {
            refusalAnnounced = true
        }
        return nil
    }

    /// A GOAWAY naming `last` the last stream processed arrived on the request's connection: libcurl tells of it
    /// to the one transfer that read the frame, which tells the others on the connection
    /// (`ConnectionTracker.goawayArrived(for:lastStream:)`).
    mutating func goawayArrived(lastStream last: UInt32) {
        if let stream, last < stream { refusedStream = true }
    }

    private static let streamPrefix = Array("Using Stream ID: ".utf8)
    private static let streamSuffix = Array(" (easy handle ".utf8)
    private static let goawayPrefix = Array("recveived GOAWAY, error=".utf8)
    private static let goawayMiddle = Array(", last_stream=".utf8)
    private static let retryPrefix = Array("Connection died, ".utf8)
    private static let refusedStreamPrefix = Array("REFUSED_STREAM, ".utf8)

    /// The last stream of "recveived GOAWAY, error=<int>, last_stream=<uint>\n", the whole message.
    private static func goawayLastStream(in text: UnsafeRawBufferPointer) -> UInt32? {
        guard hasPrefix(text, goawayPrefix) else { return nil }
        var index = goawayPrefix.count
        if index < text.count, text[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < text.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) { index += 1 }
        guard index > digitsStart else { return nil }
        return number(
            in: UnsafeRawBufferPointer(rebasing: text[index...]), after: goawayMiddle, before: Array("\n".utf8),
            exact: true)
    }

    /// The decimal number between `prefix`, at the start of `text`, and `suffix`; with `exact`, `suffix` ends
    /// `text`. `nil` when the text is not so, or the number is not a `UInt32`.
    private static func number(
        in text: UnsafeRawBufferPointer, after prefix: [UInt8], before suffix: [UInt8], exact: Bool
    ) -> UInt32? {
        guard hasPrefix(text, prefix) else { return nil }
        var index = prefix.count
        var value: UInt64 = 0
        while index < text.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) {
            value = value * 10 + UInt64(text[index] - UInt8(ascii: "0"))
            guard value <= UInt64(UInt32.max) else { return nil }
            index += 1
        }
        guard index > prefix.count, text.count - index >= suffix.count, !exact || text.count - index == suffix.count
        else { return nil }
        for (offset, byte) in suffix.enumerated() where text[index + offset] != byte { return nil }
        return UInt32(value)
    }

    private static func hasPrefix(_ text: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        text.count >= prefix.count && prefix.indices.allSatisfy { text[$0] == prefix[$0] }
    }
}

extension Transfer {
    /// Whether the transfer reads libcurl's informational text for a GOAWAY that refused its request: only
    /// for a method that is not idempotent (an idempotent one is sent again after such a failure anyway), a
    /// request that may go out over HTTP/2 (asked for, or offered over TLS), and the libcurl whose text says
    /// so (``CurlFeatures``). Reading it turns libcurl's text on (`CURLOPT_VERBOSE`): every message libcurl
    /// formats for the transfer, and a callback for each message, header line and chunk.
    ///
    /// An ``EasyHandleProfile`` holds it, so a handle that carries its options over to a transfer of an equal
    /// profile watches for that transfer too, with its debug data pointed at it (`configureGoawayWatch`).
    var watchesGoawayRefusal: Bool {
        // The method first: a GET, by far the most common request, is turned away by one set lookup.
        let method = request.method
        guard CurlFeatures.reportsGoawayInText, !Self.idempotentMethods.contains(method),
            !Self.idempotentMethods.contains(method.uppercased())
        else { return false }
        switch request.httpVersion {
        case .http1_1: return false
        case .automatic: return request.url.scheme?.lowercased() == "https"
        case .http2, .http2PriorKnowledge: return true
        }
    }

    /// Has curl hand its informational text to ``debugCallback`` with `context`, the transfer, when the
    /// transfer reads it (``watchesGoawayRefusal``).
    func configureGoawayWatch(
        _ easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void
    ) {
        guard profile?.options.watchesGoawayRefusal ?? watchesGoawayRefusal else { return }
        check("DEBUGFUNCTION", herald_easy_setopt_debug(easy, Transfer.debugCallback, context))
    }

    /// libcurl's text and traffic, on the loop thread inside a curl call: the informational messages go to
    /// ``goawayWatch``, the rest (header lines, data, TLS records) is passed over. `userdata` is the transfer,
    /// borrowed without a retain as in the other callbacks: its multi handle holds it while curl can call back.
    static let debugCallback: herald_curl_debug_cb = { _, type, data, size, userdata in
        guard type == CURLINFO_TEXT, let data, let userdata else { return 0 }
        Unmanaged<Transfer>.fromOpaque(userdata)._withUnsafeGuaranteedRef { transfer in
            if let last = transfer.goawayWatch.read(UnsafeRawBufferPointer(start: data, count: size)) {
                transfer.connections?.goawayArrived(for: transfer, lastStream: last)
            }
        }
        return 0
    }
}
