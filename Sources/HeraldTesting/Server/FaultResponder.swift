#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import NIOCore
import NIOHTTP1

/// Misbehaves on purpose, for the `/fault/...` routes.
///
/// Faults that must produce bytes no HTTP encoder would write (`bad-chunked`, `garbage-status`) write them from the
/// `HTTPResponseEncoder`'s context, so they enter the pipeline *below* the encoder and reach the socket untouched.
/// Resets set `SO_LINGER` to zero before closing, which makes the kernel send RST instead of FIN.
struct FaultResponder {
    let writer: ResponseWriter

    private var context: ChannelHandlerContext { writer.context }

    /// Performs `fault`. Every fault except ``Route/Fault/stall``, ``Route/Fault/redirectLoop`` and the first
    /// request of ``Route/Fault/resetWhenReused`` ends by closing the connection.
    /// - Parameter isFirstOnConnection: Whether the request is the first its connection carried.
    func perform(_ fault: Route.Fault, isFirstOnConnection: Bool) {
        switch fault {
        case .resetBeforeHeaders:
            reset()
        case .resetWhenReused(let firstDelay, let resetAfter, let closesCleanly):
            // A server whose keep-alive timeout ran out just as the next request arrived.
            if isFirstOnConnection {
                after(milliseconds: firstDelay) {
                    writer.write(CannedResponse(status: .ok, contentType: "text/plain", body: "ok\n"))
                }
            } else {
                after(milliseconds: resetAfter) { closesCleanly ? context.close(promise: nil) : reset() }
            }
        case .resetMidBody(let bytes, let declared):
            writer.writeHead(status: .ok, headers: octetStreamHeaders(contentLength: declared))
            let written = writer.writePatternBody(0..<bytes)
            context.flush()
            written.assumeIsolated().whenComplete { _ in reset() }
        case .stall:
            // Answer nothing; the connection stays open until the client leaves or the server shuts down.
            break
        case .truncated(let declared, let sent, gzip: false):
            writer.writeHead(status: .ok, headers: octetStreamHeaders(contentLength: declared))
            let written = writer.writePatternBody(0..<sent)
            context.flush()
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .truncated(let declared, let sent, gzip: true):
            let encoded = BytePattern.gzipEncoding(count: declared)
            var headers = octetStreamHeaders(contentLength: encoded.count)
            headers.add(name: "Content-Encoding", value: "gzip")
            headers.add(name: "ETag", value: "\"gzip-\(declared)\"")
            writer.writeHead(status: .ok, headers: headers)
            let written = writer.writeBody(context.channel.allocator.buffer(bytes: encoded.prefix(sent)))
            context.flush()
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .badChunked:
            writer.recorder.responseStarted(writer.sequenceNumber, status: 200)
            writeRawThenClose(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nhello\r\nZZ-not-hex\r\ngarbage\r\n"
            )
        case .garbageStatus(let line):
            writeRawThenClose(line + "\r\n\r\n")
        case .hugeHeader(let bytes, let lines):
            var headers: HTTPHeaders = ["Content-Type": "text/plain", "Content-Length": "3"]
            for line in 0..<lines {
                // Spread the values so that they add up to exactly `bytes`.
                let length = bytes / lines + (line < bytes % lines ? 1 : 0)
                headers.add(name: "X-Huge-\(line)", value: String(repeating: "h", count: length))
            }
            writer.writeHead(status: .ok, headers: headers)
            let written = writer.writeBody(context.channel.allocator.buffer(string: "ok\n"))
            context.flush()
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .twoLengths(let first, let second):
            writer.recorder.responseStarted(writer.sequenceNumber, status: 200)
            writeRawThenClose(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(first)\r\nContent-Length: \(second)\r\n"
                    + "\r\nhi")
        case .rawHeaders:
            writer.recorder.responseStarted(writer.sequenceNumber, status: 200)
            writeRawThenClose(Self.rawHeadersResponse)
        case .forgedStatusLines:
            writer.recorder.responseStarted(writer.sequenceNumber, status: 200)
            writeRawThenClose(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nHTTP/1.1 500 Forged: x\r\nX-Real: yes\r\n"
                    + "HTTP/a1 404 x: y\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                    + "HTTP/1.1 503 Trailer: x\r\nSet-Cookie: forged=1\r\n\r\n")
        case .trailers(let bytes, let emptyBody):
            writer.recorder.responseStarted(writer.sequenceNumber, status: 200)
            writeRawThenClose(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n"
                    + (emptyBody ? "" : "5\r\nhello\r\n") + "0\r\nX-Trailer: " + String(repeating: "t", count: bytes)
                    + "\r\n\r\n")
        case .earlyClose(let status, let bodyDelay):
            // Answered at the request's head, its body delimited by the close: libcurl reads to the close before the
            // answer is whole, and only then stops sending a request body it was still sending.
            writer.recorder.responseStarted(writer.sequenceNumber, status: status)
            writeRaw(Array("HTTP/1.1 \(status) Refused\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n".utf8))
            after(milliseconds: bodyDelay) { writeRawThenClose("refused\n") }
        case .redirectLoop:
            // A well-formed answer, kept alive like any other: only its Location is hostile.
            writer.write(.status(.found, headers: ["Location": "/fault/redirect-loop"]))
        }
    }

    /// Runs `body` now, or `milliseconds` later on the connection's event loop.
    private func after(milliseconds: Int, _ body: @escaping () -> Void) {
        guard milliseconds > 0 else { return body() }
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) { body() }
    }

    /// What `/fault/raw-headers` writes: header values that are not UTF-8, repeated fields and a folded (obsolete
    /// continuation) field, which NIO's encoder could not produce.
    static let rawHeadersResponse: [UInt8] =
        Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Folded: first\r\n second\r\n\tthird\r\n".utf8)
        + Array("X-Latin1: caf".utf8) + [0xE9]
        + Array("\r\nX-Invalid: a".utf8) + [0xFF, 0xFE, 0x80] + Array("b\r\n".utf8)
        + Array("X-Dup: one\r\nx-dup: two\r\nX-DUP: three\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n".utf8)
        + Array("Content-Length: 3\r\nConnection: close\r\n\r\nok\n".utf8)

    private func octetStreamHeaders(contentLength: Int) -> HTTPHeaders {
        ["Content-Type": "application/octet-stream", "Content-Length": String(contentLength)]
    }

    private func writeRawThenClose(_ text: String) {
        writeRawThenClose(Array(text.utf8))
    }

    /// Writes `bytes` as they are, below the response encoder, and leaves the connection open.
    private func writeRaw(_ bytes: [UInt8]) {
        let buffer = context.channel.allocator.buffer(bytes: bytes)
        guard let encoderContext = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        else {
            return context.close(promise: nil)
        }
        encoderContext.writeAndFlush(NIOAny(IOData.byteBuffer(buffer)), promise: nil)
    }

    private func writeRawThenClose(_ bytes: [UInt8]) {
        let context = self.context
        let buffer = context.channel.allocator.buffer(bytes: bytes)
        guard let encoderContext = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        else {
            return context.close(promise: nil)
        }
        encoderContext.writeAndFlush(NIOAny(IOData.byteBuffer(buffer))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Closes the connection with a TCP RST.
    private func reset() {
        let context = self.context
        guard let provider = context.channel as? any SocketOptionProvider else {
            return context.close(promise: nil)
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
