import NIOCore
import NIOHTTP1

/// The per-connection handler: records each request, collects its body, and dispatches it to a responder.
///
/// `HTTPServerPipelineHandler` sits before it, so requests arrive one at a time: the next request's head is not
/// delivered until this one's response has ended. Lives on the channel's event loop.
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The largest body `/echo` retains; larger uploads are counted and answered with `413`.
    static let maximumEchoBodySize = 32 << 20

    private let recorder: RequestRecorder
    private let barriers: BarrierRegistry
    private let gates: GateRegistry
    private let counters: RequestCounters
    private var request: ReceivedRequest?
    private var stream: (any StreamingResponder)?
    private var pendingDelay: Scheduled<Void>?
    /// The gate a `/json?gate=K` response waits at, and its place there, until it is let through.
    private var pendingGate: (key: String, id: Int)?
    /// How many request heads this connection has carried, the current one included.
    private var requestsOnConnection = 0
    /// Whether the current request was answered when its head arrived (`/bytes/N?early=1`, `/flaky?early=1`,
    /// `/fault/early-close`).
    private var answeredAtHead = false

    init(recorder: RequestRecorder, barriers: BarrierRegistry, gates: GateRegistry, counters: RequestCounters) {
        self.recorder = recorder
        self.barriers = barriers
        self.gates = gates
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestsOnConnection += 1
            let (path, route) = Route.parse(uri: head.uri)
            let sequenceNumber = recorder.requestReceived(
                on: context.channel,
                method: head.method.rawValue,
                uri: head.uri,
                path: path,
                headers: head.headers.map { (name: $0.name, value: $0.value) }
            )
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                // Without this, libcurl waits a full second before sending an upload body.
                let interim = HTTPResponseHead(version: head.version, status: .continue)
                context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
            }
            var body: ByteBuffer?
            if case .echo = route { body = context.channel.allocator.buffer(capacity: 0) }
            request = ReceivedRequest(sequenceNumber: sequenceNumber, head: head, route: route, body: body)
            if case .multipart = route {
                request?.multipart = MultipartDigester(contentType: head.headers["content-type"].first)
            }
            if route.answersBeforeBody, let request {
                answeredAtHead = true
                respond(to: request, context: context)
            }
        case .body(var buffer):
            guard let sequenceNumber = request?.sequenceNumber else { return }
            let byteCount = buffer.readableBytes
            recorder.requestBodyReceived(sequenceNumber, byteCount: byteCount)
            request?.bodyByteCount += byteCount
            request?.multipart?.consume(buffer)
            if let retained = request?.body?.readableBytes, retained + byteCount <= Self.maximumEchoBodySize {
                request?.body?.writeBuffer(&buffer)
            }
        case .end:
            guard let request else { return }
            self.request = nil
            if answeredAtHead {
                answeredAtHead = false
            } else {
                respond(to: request, context: context)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        stream?.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        pendingDelay?.cancel()
        pendingDelay = nil
        if let pendingGate { gates.leave(key: pendingGate.key, id: pendingGate.id) }
        pendingGate = nil
        stream?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection-level I/O errors (a client reset, a write to a closed socket) end the connection; the test
        // that caused them asserts on the client side.
        context.close(promise: nil)
    }

    private func respond(to request: ReceivedRequest, context: ChannelHandlerContext) {
        let writer = ResponseWriter(context: context, request: request, recorder: recorder)
        switch request.route {
        case .bytes(let options):
            let attempt = options.key.map { counters.next(for: "bytes:" + $0) } ?? 1
            let stream = ByteStreamResponder(writer: writer, options: options, attempt: attempt, gates: gates) {
                [weak self] in
                self?.stream = nil
            }
            self.stream = stream
            stream.start()
        case .events(let options):
            let stream = EventStreamResponder(writer: writer, options: options, gates: gates) { [weak self] in
                self?.stream = nil
            }
            self.stream = stream
            stream.start()
        case .delay(let milliseconds):
            let delay = TimeAmount.milliseconds(Int64(milliseconds))
            pendingDelay = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [weak self] in
                self?.pendingDelay = nil
                writer.write(.json(["delayMilliseconds": milliseconds]))
            }
        case .barrier(let count, let key):
            let parked = NIOLoopBound(writer, eventLoop: context.eventLoop)
            barriers.arrive(key: key, count: count) {
                parked.eventLoop.execute { parked.value.write(.json(["released": count])) }
            }
        case .fault(let fault):
            FaultResponder(writer: writer).perform(fault, isFirstOnConnection: requestsOnConnection == 1)
        case .json(gate: let key?) where counters.next(for: "json:" + key) == 1:
            // The first request at this gate waits for a pass; later ones (a task started again) are answered.
            let response = request.route.cannedResponse(for: request) ?? .status(.internalServerError)
            let parked = NIOLoopBound((handler: self, writer: writer, response: response), eventLoop: context.eventLoop)
            pendingGate = gates.arrive(key: key) {
                parked.eventLoop.execute {
                    parked.value.handler.pendingGate = nil
                    parked.value.writer.write(parked.value.response)
                }
            }.map { (key, $0) }
        case .session(let route):
            writer.write(route.response(for: request, counters: counters))
        default:
            writer.write(request.route.cannedResponse(for: request) ?? .status(.internalServerError))
        }
    }
}
