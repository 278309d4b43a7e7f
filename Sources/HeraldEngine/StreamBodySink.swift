import Foundation

/// What takes a streamed response body as it arrives: `Herald`'s buffer between the transfer and the consumer
/// of the body's stream. Called on the loop thread.
package protocol StreamedBodyConsumer: AnyObject, Sendable {
    /// A response's body starts (its head came first, through ``headDidEnd(_:)``).
    func begin(_ head: ResponseHead)
    /// Body bytes arrived; valid during the call only.
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Whether the consumer has all it takes for now; if so it keeps `transfer`, to continue receiving
    /// (``Transfer/resumeReceiving()``) once it has taken enough, and the write callback pauses.
    func isFull(pausing transfer: Transfer) -> Bool
    /// A response head ended, before any of its body.
    func headDidEnd(_ head: ResponseHead)
}

/// Hands a streamed data task's response body to its ``StreamedBodyConsumer`` as bytes arrive. Loop thread only.
///
/// Keeps nothing itself: the buffer holds what the consumer hasn't taken, and tells the write callback to
/// pause (``isFull(pausing:)``) when that reaches the buffer's high watermark.
final class StreamBodySink: BodySink {
    private let buffer: any StreamedBodyConsumer

    init(buffer: any StreamedBodyConsumer) {
        self.buffer = buffer
    }

    func begin(response: ResponseHead, declaredLength: Int64?) -> Result<Int64, TransferError> {
        buffer.begin(response)
        return .success(0)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransferError? {
        buffer.write(bytes)
        return nil
    }

    /// Nothing is collected: the consumer has the bytes.
    func finish() -> Data { Data() }

    var file: DownloadedFile? { nil }

    func isFull(pausing transfer: Transfer) -> Bool {
        buffer.isFull(pausing: transfer)
    }

    func headDidEnd(_ makeResponse: () -> ResponseHead) {
        buffer.headDidEnd(makeResponse())
    }
}
