import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Everything a raw TCP client received before the connection ended, and how it ended.
struct RawResponse: Sendable {
    enum Ending: Sendable, Equatable {
        /// The server closed the connection normally (FIN).
        case closed
        /// The connection failed, typically with a reset (`ECONNRESET`).
        case failed(String)
    }

    /// The received bytes, up to the client's retention limit.
    var bytes: [UInt8]
    /// The number of bytes received, retained or not.
    var byteCount: Int
    var ending: Ending

    /// The bytes before the first blank line, as text.
    var head: String {
        guard let end = headEnd else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The bytes after the first blank line.
    var body: [UInt8] {
        guard let end = headEnd else { return [] }
        return Array(bytes[(end + 4)...])
    }

    /// The number of received bytes after the first blank line, retained or not.
    var bodyByteCount: Int {
        guard let end = headEnd else { return 0 }
        return byteCount - (end + 4)
    }

    var statusCode: Int? {
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        return parts.count >= 2 ? Int(parts[1]) : nil
    }

    /// The first header named `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    private var headEnd: Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}

/// A client that writes raw bytes to a TCP connection and reads until the server closes it.
///
/// Used where an HTTP client would hide what is on the wire: faults, framing, exact byte counts.
final class RawHTTPClient: Sendable {
    struct TimedOut: Error {}

    private let channel: any Channel
    private let result: EventLoopFuture<RawResponse>
    private let didTimeOut = Atomic<Bool>(false)

    private init(channel: any Channel, result: EventLoopFuture<RawResponse>) {
        self.channel = channel
        self.result = result
    }

    /// Connects to `127.0.0.1:port`.
    ///
    /// - Parameter retainingAtMost: How many received bytes to keep; the rest are only counted.
    static func connect(port: Int, retainingAtMost limit: Int = 16 << 20) async throws -> RawHTTPClient {
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: RawResponse.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            CollectingHandler(limit: limit, promise: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: port)
                .get()
        } catch {
            promise.fail(error)
            throw error
        }
        return RawHTTPClient(channel: channel, result: promise.futureResult)
    }

    /// Sends one request, given as text with `\r\n` line endings, and returns everything received until close.
    static func exchange(
        _ request: String,
        port: Int,
        retainingAtMost limit: Int = 16 << 20,
        timeout: Duration = .seconds(30)
    ) async throws -> RawResponse {
        let client = try await connect(port: port, retainingAtMost: limit)
        try await client.send(request)
        return try await client.response(timeout: timeout)
    }

    /// A `GET` request for `target` that asks the server to close the connection afterwards.
    static func get(_ target: String, headers: [String] = []) -> String {
        (["GET \(target) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"] + headers).joined(separator: "\r\n")
            + "\r\n\r\n"
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(string: text))
    }

    /// Waits until the server closes the connection.
    ///
    /// - Throws: ``TimedOut`` if it stays open for `timeout`; the connection is then closed.
    func response(timeout: Duration = .seconds(30)) async throws -> RawResponse {
        let channel = self.channel
        let milliseconds = Int64(timeout / .milliseconds(1))
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) { [self] in
            didTimeOut.store(true, ordering: .relaxed)
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        let response = try await result.get()
        if didTimeOut.load(ordering: .relaxed) { throw TimedOut() }
        return response
    }

    func close() async {
        try? await channel.close()
    }
}

/// Collects inbound bytes and completes a promise when the connection ends.
private final class CollectingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let limit: Int
    private let promise: EventLoopPromise<RawResponse>
    private var response = RawResponse(bytes: [], byteCount: 0, ending: .closed)

    init(limit: Int, promise: EventLoopPromise<RawResponse>) {
        self.limit = limit
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        response.byteCount += buffer.readableBytes
        let keep = min(buffer.readableBytes, limit - response.bytes.count)
        if keep > 0, let bytes = buffer.readBytes(length: keep) { response.bytes += bytes }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        response.ending = .failed("\(error)")
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(response)
    }
}
