import NIOCore

/// Counts every byte handed to the socket, for ``TestServerStatistics/bytesSent``.
///
/// Sits at the head of the pipeline, below the HTTP encoder, so it sees status lines, headers, chunk framing and
/// the raw bytes faults write. A byte is counted when its write completes, not when it is queued.
final class ByteCountingHandler: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let recorder: RequestRecorder

    init(recorder: RequestRecorder) {
        self.recorder = recorder
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let byteCount = unwrapOutboundIn(data).readableBytes
        let promise = promise ?? context.eventLoop.makePromise()
        promise.futureResult.whenSuccess { [recorder] in recorder.bytesSent(byteCount) }
        context.write(data, promise: promise)
    }
}
