import NIOCore
import NIOHTTP1

/// The parameters of an `/events/{n}` response (server-sent events).
struct EventStreamOptions: Sendable, Equatable {
    /// The largest `data` value a client may ask for.
    static let maximumDataSize = 1 << 20

    /// How many events the stream has; they are numbered from 1.
    var count: Int
    /// The size of each event's `data` value in bytes (at least the event's number and a space fit).
    var dataSize: Int
    /// After this many complete events on one connection, half of the next is written and the connection
    /// closed without ending the response; 0 never drops.
    var dropEvery: Int
    /// Written as a `retry` field at the start of each connection's stream, when set.
    var retryMilliseconds: Int?
    /// The gate each response waits at between its head and its body (see ``GateRegistry``); `nil`, none.
    var gate: String?

    init(count: String, query: RouteQuery) throws {
        self.count = try RouteQuery.integer(count, named: "event count", in: 0...100_000_000)
        self.dataSize = try query.integer("size", default: 16, in: 1...Self.maximumDataSize)
        self.dropEvery = try query.integer("dropEvery", default: 0, in: 0...100_000_000)
        let retry = try query.integer("retry", default: -1, in: -1...600_000)
        self.retryMilliseconds = retry >= 0 ? retry : nil
        self.gate = query.value("gate")
    }
}

/// Streams an `/events/{n}` response: events `id: i`, `event: tick`, `data: i xxx…` from the one after the
/// request's `Last-Event-ID` (or the first), written while the channel is writable and resumed on
/// `channelWritabilityChanged`, so memory stays flat however many events are asked for. A request whose
/// `Last-Event-ID` is the last event or past it gets `204 No Content`. Lives on the channel's event loop;
/// owned by ``TestServerHandler``.
///
/// Each time it finds the channel unwritable it counts a blocked send (``TestServerStatistics/sendBlockedCount``).
final class EventStreamResponder: StreamingResponder {
    private let writer: ResponseWriter
    private let options: EventStreamOptions
    private var next: Int
    /// Whether the request named the last event it saw (`Last-Event-ID`).
    private let resumes: Bool
    private var sentOnConnection = 0
    private var isFinished = false
    /// Whether the body may be written: false while the response waits at its gate.
    private var isPastGate = true
    /// The ID the gate gave this response while it waits there.
    private var gateWaiterID: Int?
    private let gates: GateRegistry
    private let onFinish: () -> Void

    /// - Parameters:
    ///   - gates: The server's gates, for a response with ``EventStreamOptions/gate``.
    ///   - onFinish: Called once the final write has been issued, or when the stream is cancelled.
    init(writer: ResponseWriter, options: EventStreamOptions, gates: GateRegistry, onFinish: @escaping () -> Void) {
        self.writer = writer
        self.options = options
        self.gates = gates
        let lastID = writer.request.head.headers["last-event-id"].first.flatMap { Int($0) }
        self.resumes = lastID != nil
        self.next = max(1, (lastID ?? 0) + 1)
        self.onFinish = onFinish
    }

    /// Writes the head, then (past the gate, if any) as many events as the channel accepts.
    func start() {
        guard next <= options.count || !resumes else {
            writer.write(CannedResponse(status: .noContent, body: "", headers: [:]))
            isFinished = true
            return onFinish()
        }
        writer.writeHead(
            status: .ok,
            headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store", "Transfer-Encoding": "chunked"])
        guard let gate = options.gate else { return startBody() }
        isPastGate = false
        writer.context.flush()
        let responder = NIOLoopBound(self, eventLoop: writer.context.eventLoop)
        gateWaiterID = gates.arrive(key: gate) {
            responder.eventLoop.execute {
                responder.value.gateWaiterID = nil
                responder.value.isPastGate = true
                responder.value.startBody()
            }
        }
    }

    private func startBody() {
        guard !isFinished else { return }
        if let retry = options.retryMilliseconds {
            writer.writeBody(ByteBuffer(string: "retry: \(retry)\n\n"))
        }
        pump()
    }

    /// Resumes writing when the channel has drained below its low-water mark.
    func writabilityChanged() {
        if isPastGate, writer.context.channel.isWritable { pump() }
    }

    /// Stops writing; the connection has gone away.
    func cancel() {
        guard !isFinished else { return }
        isFinished = true
        if let gate = options.gate, let id = gateWaiterID { gates.leave(key: gate, id: id) }
        onFinish()
    }

    private func pump() {
        let channel = writer.context.channel
        guard !isFinished else { return }
        while next <= options.count, channel.isWritable {
            if options.dropEvery > 0, sentOnConnection == options.dropEvery {
                return drop()
            }
            writer.writeBody(event(next))
            next += 1
            sentOnConnection += 1
        }
        if next > options.count {
            isFinished = true
            writer.writeEnd()
            onFinish()
        } else {
            writer.recorder.sendBlocked()
            writer.context.flush()
        }
    }

    /// Writes half of the next event, then closes the connection mid-response.
    private func drop() {
        isFinished = true
        var partial = event(next)
        partial.moveWriterIndex(to: partial.readerIndex + partial.readableBytes / 2)
        let context = writer.context
        writer.writeBody(partial).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        context.flush()
        onFinish()
    }

    private func event(_ number: Int) -> ByteBuffer {
        let head = "id: \(number)\nevent: tick\ndata: \(number) "
        var buffer = ByteBuffer()
        buffer.reserveCapacity(head.utf8.count + options.dataSize + 2)
        buffer.writeString(head)
        let padding = max(0, options.dataSize - "\(number) ".utf8.count)
        buffer.writeRepeatingByte(UInt8(ascii: "x"), count: padding)
        buffer.writeString("\n\n")
        return buffer
    }
}
