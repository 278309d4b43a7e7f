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
        /// Writes what the closure makes of the request target (path and query), then closes.
        case route(@Sendable (String) -> String)
    }

    /// A `200` with `body`, `Content-Length` and `Connection: close`, plus `headers` (each `Name: value`).
    static func ok(_ body: String, headers: [String] = []) -> String {
        response(status: "200 OK", body: body, headers: headers)
    }

    /// A response with `status` (`"503 Service Unavailable"`), `body` and `headers`.
    static func response(status: String, body: String = "", headers: [String] = []) -> String {
        let head = ["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)", "Connection: close"] + headers
        return head.joined(separator: "\r\n") + "\r\n\r\n" + body
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
        let head = String(received[..<end.lowerBound])
        var step = server.nextStep(head: head)
        if case .route(let route) = step {
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            step = .respond(route(target))
        }
        let channel = context.channel
        switch step {
        case .route:
            channel.close(promise: nil)
        case .respond(let text):
            let bytes = channel.allocator.buffer(string: text)
            context.writeAndFlush(wrapOutboundOut(bytes)).whenComplete { _ in channel.close(promise: nil) }
        case .reset:
            if let provider = channel as? any SocketOptionProvider {
                provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
    }

    typealias OutboundOut = ByteBuffer
}
