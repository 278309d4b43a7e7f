import Foundation

/// Hands a streamed data task's response body to its ``ResponseBodyBuffer`` as bytes arrive. Loop thread only.
///
/// Keeps nothing itself: the buffer holds what the consumer hasn't taken, and tells the write callback to
/// pause (``isFull(pausing:)``) when that reaches the buffer's high watermark.
final class StreamBodySink: BodySink {
    private let buffer: ResponseBodyBuffer

    init(buffer: ResponseBodyBuffer) {
        self.buffer = buffer
    }

    func begin(response: HTTPResponse, declaredLength: Int64?) -> Result<Int64, HeraldError> {
        buffer.begin(response)
        return .success(0)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> HeraldError? {
        buffer.write(bytes)
        return nil
    }

    /// Nothing is collected: the consumer has the bytes.
    func finish() -> Data { Data() }

    var file: DownloadedFile? { nil }

    func isFull(pausing transfer: Transfer) -> Bool {
        buffer.isFull(pausing: transfer)
    }

    func headDidEnd(_ makeResponse: () -> HTTPResponse) {
        buffer.headDidEnd(makeResponse())
    }
}
