/// The parameters of a `/bytes/{n}` response.
struct ByteStreamOptions: Sendable, Equatable {
    /// The largest chunk a client may ask for; chunks are slices of one shared pattern buffer of this size.
    static let maximumChunkSize = 1 << 20
    /// The largest body a client may ask for (1 TiB): large enough for any test, small enough to never overflow.
    static let maximumCount = 1 << 40

    /// The size of the full representation in bytes.
    var count: Int
    /// Whether to use `Transfer-Encoding: chunked` instead of `Content-Length`.
    var isChunked: Bool
    /// The size of each body write.
    var chunkSize: Int
    /// The pause between two body writes, in milliseconds.
    var delayMilliseconds: Int
    /// Whether `Range` requests are honoured.
    var acceptsRanges: Bool
    /// The pause between the head and the first body byte, in milliseconds: the head is flushed at once.
    var headDelayMilliseconds: Int
    /// The key the server counts this URL's requests under, for ``dropAfter`` and ``changesAfterFirst``.
    var key: String?
    /// The first request with ``key`` gets this many body bytes, then a normal close (FIN) short of the length.
    var dropAfter: Int?
    /// How many of the first requests with ``key`` stop short so: each ``dropAfter`` bytes past where its range
    /// starts. Default 1.
    var drops: Int = 1
    /// Whether the requests with ``key`` after the first get a changed representation: another `ETag` and
    /// `Last-Modified`, and byte `i` is `UInt8((i + 1) % 251)`.
    var changesAfterFirst: Bool
    /// The gate the body waits at once ``gateAfter`` bytes of it are written (see ``GateRegistry``); `nil`, none.
    var gate: String?
    /// How many body bytes go out before the response waits at ``gate``.
    var gateAfter: Int
    /// The `Content-Length` a `206` answer declares instead of its range's size (a lying server); `nil`, the
    /// truth. The body sent is the range's either way.
    var declaredPartialLength: Int?
    /// Whether the response starts as soon as the request's head arrives, while its body may still be coming
    /// (read and counted all the same), as a server that answers without waiting for the body does.
    var answersBeforeBody: Bool
    /// How many bytes of its range a `206` sends before ending its body, cleanly, short of the range; `nil`, all.
    var partialBodyLength: Int?
    /// Whether a `206` leaves out `ETag` and `Last-Modified` (a `200` still carries them).
    var omitsPartialValidators: Bool
    /// The first byte of a `206` answered to a request without `Range`, up to the end (a broken cache or proxy
    /// sending part of the representation unasked); `nil`, a `200` as usual. Query `unaskedRangeStart`.
    var unaskedRangeStart: Int? = nil
    /// Whether every answer, a `200` too, leaves out `ETag` and `Last-Modified`: a resource a download can't
    /// continue. Query `validators=0`.
    var omitsValidators = false

    init(
        count: Int, isChunked: Bool = false, chunkSize: Int = 64 << 10, delayMilliseconds: Int = 0,
        acceptsRanges: Bool = true, headDelayMilliseconds: Int = 0, key: String? = nil, dropAfter: Int? = nil,
        drops: Int = 1,
        changesAfterFirst: Bool = false, gate: String? = nil, gateAfter: Int = 0, declaredPartialLength: Int? = nil,
        answersBeforeBody: Bool = false, partialBodyLength: Int? = nil, omitsPartialValidators: Bool = false
    ) {
        self.count = count
        self.isChunked = isChunked
        self.chunkSize = chunkSize
        self.delayMilliseconds = delayMilliseconds
        self.acceptsRanges = acceptsRanges
        self.headDelayMilliseconds = headDelayMilliseconds
        self.key = key
        self.dropAfter = dropAfter
        self.drops = drops
        self.changesAfterFirst = changesAfterFirst
        self.gate = gate
        self.gateAfter = gateAfter
        self.declaredPartialLength = declaredPartialLength
        self.answersBeforeBody = answersBeforeBody
        self.partialBodyLength = partialBodyLength
        self.omitsPartialValidators = omitsPartialValidators
    }

    init(count: String, query: RouteQuery) throws {
        self.init(
            count: try RouteQuery.integer(count, named: "byte count", in: 0...Self.maximumCount),
            isChunked: query.flag("chunked"),
            chunkSize: try query.integer("chunkSize", default: 64 << 10, in: 1...Self.maximumChunkSize),
            delayMilliseconds: try query.integer("delayMs", default: 0, in: 0...60_000),
            acceptsRanges: query.value("ranges") != "0",
            headDelayMilliseconds: try query.integer("headDelayMs", default: 0, in: 0...60_000),
            key: query.value("key"),
            dropAfter: query.value("dropAfter") == nil
                ? nil : try query.integer("dropAfter", default: 0, in: 0...Self.maximumCount),
            drops: try query.integer("drops", default: 1, in: 1...1_000),
            changesAfterFirst: query.flag("changed"),
            gate: query.value("gate"),
            gateAfter: try query.integer("gateAfter", default: 0, in: 0...Self.maximumCount),
            declaredPartialLength: query.value("partialLength") == nil
                ? nil : try query.integer("partialLength", default: 0, in: 0...Int.max),
            answersBeforeBody: query.flag("early"),
            partialBodyLength: query.value("partialBody") == nil
                ? nil : try query.integer("partialBody", default: 0, in: 0...Self.maximumCount),
            omitsPartialValidators: query.flag("bareRanges")
        )
        unaskedRangeStart =
            query.value("unaskedRangeStart") == nil
            ? nil : try query.integer("unaskedRangeStart", default: 0, in: 0...Self.maximumCount)
        omitsValidators = query.value("validators") == "0"
    }

    /// The strong validator of the representation; it depends only on the size because the content does.
    var entityTag: String { "\"herald-bytes-\(count)\"" }

    /// The strong validator of the changed representation (see ``changesAfterFirst``).
    var changedEntityTag: String { "\"herald-bytes-\(count)-changed\"" }
}
