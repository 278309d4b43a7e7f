import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that answers each new connection with the next step of a script: raw bytes then a close,
/// or a TCP reset. For what `TestServer` has no endpoint for: a failure that turns into a success on the third
/// attempt, a `429` with `Retry-After`. Records when each request arrived and its head.
final class ScriptedServer: Sendable {
    enum Step: Sendable {
        /// Writes this response as it is, then closes.
        case respond(String)
        /// Closes with a TCP RST before answering.
        case reset
    }

    struct Arrival: Sendable {
        let time: ContinuousClock.Instant
        let head: String
    }

    let port: Int
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let state: Mutex<(script: [Step], arrivals: [Arrival])>

    /// Starts on `127.0.0.1`, port chosen by the kernel. After the script runs out, its last step repeats.
    static func start(_ script: [Step]) async throws -> ScriptedServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let box = ServerBox()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptedHandler(server: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = ScriptedServer(channel: channel, group: group, script: script)
        box.server.withLock { $0 = server }
        return server
    }

    private init(channel: any Channel, group: MultiThreadedEventLoopGroup, script: [Step]) {
        self.channel = channel
        self.group = group
        self.port = channel.localAddress?.port ?? 0
        self.state = Mutex((script, []))
    }

    /// `http://127.0.0.1:PORT/path`.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// The requests received so far, in order.
    var arrivals: [Arrival] { state.withLock { $0.arrivals } }

    fileprivate func nextStep(head: String) -> Step {
        state.withLock { state in
            state.arrivals.append(Arrival(time: .now, head: head))
            return state.script.count > 1 ? state.script.removeFirst() : state.script[0]
        }
    }

    func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

/// Lets the child channels reach the server, which exists only once the bind succeeded.
private final class ServerBox: Sendable {
    let server = Mutex<ScriptedServer?>(nil)
}

private final class ScriptedHandler: ChannelInboundHandler, @unchecked Sendable {
    // Safety: used only on its channel's event loop.
    typealias InboundIn = ByteBuffer

    private let server: ServerBox
    private var received = ""
    private var answered = false

    init(server: ServerBox) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readString(length: buffer.readableBytes) ?? ""
        guard !answered, let end = received.range(of: "\r\n\r\n"),
            let server = server.server.withLock({ $0 })
        else { return }
        answered = true
        switch server.nextStep(head: String(received[..<end.lowerBound])) {
        case .respond(let text):
            let bytes = context.channel.allocator.buffer(string: text)
            context.writeAndFlush(wrapOutboundOut(bytes)).whenComplete { _ in context.close(promise: nil) }
        case .reset:
            let close = { context.close(promise: nil) }
            if let provider = context.channel as? any SocketOptionProvider {
                provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in close() }
            } else {
                close()
            }
        }
    }

    typealias OutboundOut = ByteBuffer
}
