import NIOCore
import NIOHTTP1

/// Streams a `/bytes/{n}` response with backpressure.
///
/// Chunks are written while the channel is writable and the pump resumes on `channelWritabilityChanged`, so at most
/// about one high-water mark (64 KiB by default) plus one chunk is ever queued, however large `n` is. Each chunk is a
/// slice of ``BytePattern/buffer``, so no body storage is allocated at all. With a delay, one chunk is written per
/// tick of `delayMs`. Lives on the channel's event loop; owned by ``TestServerHandler``.
///
/// Each time it finds the channel unwritable — NIO holds more than its high-water mark because the socket's
/// send buffer is full, the client not reading — it counts a blocked send (``TestServerStatistics/sendBlockedCount``).
final class ByteStreamResponder: StreamingResponder {
    private static let lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
    /// The `Last-Modified` of the changed representation (see ``ByteStreamOptions/changesAfterFirst``).
    private static let changedLastModified = "Tue, 02 Jan 2024 00:00:00 GMT"

    private let writer: ResponseWriter
    private let options: ByteStreamOptions
    private var nextOffset: Int
    private var endOffset: Int
    private var queuedBytes = 0
    private var isWaitingForDelay = false
    private var isFinished = false
    private let onFinish: () -> Void
    /// Where the body stops short with a close (the first `drops` keyed requests of a `dropAfter` URL): that
    /// many bytes past where the body starts, set again when a range moves the start.
    private var dropOffset: Int?
    /// Whether this is a keyed request after the first that stops short too.
    private let isLaterDrop: Bool
    /// Whether this response serves the changed representation.
    private let isChanged: Bool
    /// The server's gates, for a response with ``ByteStreamOptions/gate``.
    private let gates: GateRegistry?
    /// Whether the body has gone past its gate (or has none).
    private var isPastGate: Bool
    /// Whether the body waits at its gate now.
    private var isAtGate = false
    /// The ID the gate gave this response while it waits there.
    private var gateWaiterID: Int?

    /// - Parameters:
    ///   - attempt: The number of this request among those with the options' key, from 1 (1 without a key).
    ///   - onFinish: Called once the final write has been issued, or when the stream is cancelled.
    ///   - gates: The server's gates, for a response with ``ByteStreamOptions/gate``.
    init(
        writer: ResponseWriter, options: ByteStreamOptions, attempt: Int = 1, gates: GateRegistry? = nil,
        onFinish: @escaping () -> Void
    ) {
        self.writer = writer
        self.options = options
        self.nextOffset = 0
        self.endOffset = options.count
        self.onFinish = onFinish
        self.dropOffset = attempt <= options.drops ? options.dropAfter.map { min($0, options.count) } : nil
        self.isLaterDrop = attempt > 1 && attempt <= options.drops
        self.isChanged = attempt > 1 && options.changesAfterFirst
        self.gates = gates
        // With a key, only the first request waits: a later one (a retry, a resumption) goes straight on.
        self.isPastGate = options.gate == nil || gates == nil || (options.key != nil && attempt > 1)
    }

    private var entityTag: String { isChanged ? options.changedEntityTag : options.entityTag }
    private var lastModified: String { isChanged ? Self.changedLastModified : Self.lastModified }

    /// Writes the head, then as much of the body as the channel accepts.
    func start() {
        guard let status = writeHead() else {
            // The 416 was written as a complete response; only the bookkeeping is left.
            isFinished = true
            return onFinish()
        }
        guard status.mayHaveResponseBody, !writer.request.isHead else { return finish() }
        if options.headDelayMilliseconds > 0 {
            // The head goes out now, the body after the pause: a client sees the head alone first.
            isWaitingForDelay = true
            writer.context.flush()
            let delay = TimeAmount.milliseconds(Int64(options.headDelayMilliseconds))
            writer.context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
                isWaitingForDelay = false
                pump()
            }
            return
        }
        pump()
    }

    /// Resumes writing when the channel has drained below its low-water mark.
    func writabilityChanged() {
        if writer.context.channel.isWritable { pump() }
    }

    /// Stops writing; the connection has gone away.
    func cancel() {
        guard !isFinished else { return }
        isFinished = true
        if let gate = options.gate, let id = gateWaiterID { gates?.leave(key: gate, id: id) }
        onFinish()
    }

    /// Waits at the gate once ``ByteStreamOptions/gateAfter`` bytes are out: true while it waits.
    private func waitsAtGate() -> Bool {
        guard !isPastGate, nextOffset >= options.gateAfter, let gate = options.gate, let gates else { return false }
        guard !isAtGate else { return true }
        isAtGate = true
        writer.context.flush()
        let responder = NIOLoopBound(self, eventLoop: writer.context.eventLoop)
        gateWaiterID = gates.arrive(key: gate) {
            responder.eventLoop.execute {
                responder.value.gateWaiterID = nil
                responder.value.isAtGate = false
                responder.value.isPastGate = true
                responder.value.pump()
            }
        }
        // A pass kept from before lets it through at once (the closure runs later, on this loop).
        return true
    }

    /// Writes the head for the requested range.
    ///
    /// - Returns: The status written, or `nil` if a complete error response (416) was written instead.
    private func writeHead() -> HTTPResponseStatus? {
        var headers: HTTPHeaders = [
            "Content-Type": "application/octet-stream",
            "ETag": entityTag,
            "Last-Modified": lastModified,
            "Accept-Ranges": options.acceptsRanges ? "bytes" : "none",
        ]
        if options.omitsValidators {
            headers.remove(name: "ETag")
            headers.remove(name: "Last-Modified")
        }
        switch requestedRange() {
        case .full:
            addFraming(to: &headers, length: options.count)
            writer.writeHead(status: .ok, headers: headers)
            return .ok
        case .partial(let range):
            nextOffset = range.lowerBound
            // A later keyed request that stops short too (`drops`) does so `dropAfter` bytes past its range's start.
            if isLaterDrop, let dropAfter = dropOffset { dropOffset = min(range.lowerBound + dropAfter, options.count) }
            endOffset =
                options.partialBodyLength.map { min(range.upperBound, range.lowerBound + $0) } ?? range.upperBound
            if options.omitsPartialValidators {
                headers.remove(name: "ETag")
                headers.remove(name: "Last-Modified")
            }
            headers.add(
                name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(options.count)")
            if let declared = options.declaredPartialLength {
                headers.add(name: "Content-Length", value: String(declared))
            } else {
                addFraming(to: &headers, length: range.count)
            }
            writer.writeHead(status: .partialContent, headers: headers)
            return .partialContent
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: "bytes */\(options.count)")
            // With a page, as real servers send one (nginx's is about 190 bytes): no part of the representation.
            writer.write(
                CannedResponse(
                    status: .rangeNotSatisfiable, contentType: "text/plain", body: "416 Range Not Satisfiable\n",
                    headers: headers))
            return nil
        }
    }

    private func requestedRange() -> ByteRange {
        let headers = writer.request.head.headers
        guard options.acceptsRanges else { return .full }
        // If-Range: serve the range only if the client's validator still matches, else the whole representation.
        if let validator = headers["if-range"].first, validator != entityTag, validator != lastModified {
            return .full
        }
        if headers["range"].isEmpty, let start = options.unaskedRangeStart, start < options.count {
            return .partial(start..<options.count)
        }
        return ByteRange(header: headers["range"].first, count: options.count)
    }

    private func addFraming(to headers: inout HTTPHeaders, length: Int) {
        if options.isChunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: String(length))
        }
    }

    private func pump() {
        let channel = writer.context.channel
        guard !isFinished, !isWaitingForDelay, !waitsAtGate() else { return }
        if let dropOffset, nextOffset >= dropOffset { return drop() }
        while nextOffset < min(endOffset, dropOffset ?? endOffset), channel.isWritable {
            writeChunk()
            if waitsAtGate() { return }
            if options.delayMilliseconds > 0, nextOffset < endOffset {
                // Marked before the flush: a flush that drains the socket fires channelWritabilityChanged
                // synchronously, and a pump re-entered from there must not write the next chunk early.
                isWaitingForDelay = true
                writer.context.flush()
                let delay = TimeAmount.milliseconds(Int64(options.delayMilliseconds))
                writer.context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
                    isWaitingForDelay = false
                    pump()
                }
                return
            }
        }
        if let dropOffset, nextOffset >= dropOffset {
            drop()
        } else if nextOffset == endOffset {
            finish()
        } else {
            // Not writable: flush what is queued and wait for channelWritabilityChanged.
            writer.recorder.sendBlocked()
            writer.context.flush()
        }
    }

    private func writeChunk() {
        let length = min(options.chunkSize, min(endOffset, dropOffset ?? endOffset) - nextOffset)
        let recorder = writer.recorder
        queuedBytes += length
        recorder.queuedBodyBytes(queuedBytes)
        let slice = BytePattern.slice(at: nextOffset + (isChanged ? 1 : 0), length: length)
        writer.writeBody(slice).assumeIsolated().whenComplete { _ in
            self.queuedBytes -= length
        }
        nextOffset += length
    }

    /// Closes the connection (FIN) once the bytes written so far are out, short of the declared length.
    private func drop() {
        guard !isFinished else { return }
        isFinished = true
        let context = writer.context
        // Writes complete in order: once this empty one has, every byte before it is out.
        let flushed = writer.writeBody(context.channel.allocator.buffer(capacity: 0))
        context.flush()
        flushed.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        onFinish()
    }

    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        writer.writeEnd()
        onFinish()
    }
}

/// A response that writes its body over time, as the connection accepts it.
protocol StreamingResponder: AnyObject {
    /// The channel's writability changed: continue writing if it is writable.
    func writabilityChanged()
    /// The connection has gone away: stop.
    func cancel()
}
