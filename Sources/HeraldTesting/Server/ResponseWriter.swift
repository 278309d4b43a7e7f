import NIOCore
import NIOHTTP1

/// Writes response parts for one request and keeps its ``RecordedRequest`` up to date.
///
/// Every method must be called on the channel's event loop; the handler context is only valid there.
struct ResponseWriter {
    let context: ChannelHandlerContext
    let request: ReceivedRequest
    let recorder: RequestRecorder

    var sequenceNumber: Int { request.sequenceNumber }

    /// Writes a response head, adding `Connection: close` when the client asked for it.
    func writeHead(status: HTTPResponseStatus, headers: HTTPHeaders) {
        var headers = headers
        if !request.head.isKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        recorder.responseStarted(sequenceNumber, status: Int(status.code))
        let head = HTTPResponseHead(version: request.head.version, status: status, headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    }

    /// Writes body bytes, counting them as sent once the socket has taken them.
    ///
    /// - Returns: A future that completes when the write does.
    @discardableResult
    func writeBody(_ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let byteCount = buffer.readableBytes
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenSuccess { [recorder, sequenceNumber] in
            recorder.bodyBytesSent(sequenceNumber, byteCount: byteCount)
        }
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: promise)
        return promise.futureResult
    }

    /// Writes pattern bytes `range` of the `/bytes` representation in slices of at most `maximumChunkSize`.
    ///
    /// Used by faults, which write a bounded amount without waiting for writability.
    ///
    /// - Returns: A future that completes when the last write does.
    func writePatternBody(_ range: Range<Int>) -> EventLoopFuture<Void> {
        var last = context.eventLoop.makeSucceededVoidFuture()
        var offset = range.lowerBound
        while offset < range.upperBound {
            let length = min(ByteStreamOptions.maximumChunkSize, range.upperBound - offset)
            last = writeBody(BytePattern.slice(at: offset, length: length))
            offset += length
        }
        return last
    }

    /// Writes the end of the response and flushes; then records completion and closes if not keep-alive.
    func writeEnd() {
        let keepAlive = request.head.isKeepAlive
        let context = self.context
        let future = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
        future.assumeIsolated().whenComplete { [recorder, sequenceNumber] _ in
            recorder.responseCompleted(sequenceNumber)
            if !keepAlive { context.close(promise: nil) }
        }
    }

    /// Writes a complete canned response; a `HEAD` request gets the head alone.
    func write(_ response: CannedResponse) {
        var headers = response.headers
        let hasBody = response.status.mayHaveResponseBody
        if hasBody {
            headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes))
        }
        writeHead(status: response.status, headers: headers)
        if hasBody, !request.isHead, response.body.readableBytes > 0 {
            writeBody(response.body)
        }
        writeEnd()
    }
}
