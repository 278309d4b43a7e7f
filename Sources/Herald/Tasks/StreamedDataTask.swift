import Foundation

/// A data task whose response body goes to a consumer as it arrives, through a bounded
/// ``ResponseBodyBuffer``, instead of being collected: what ``SessionManager/bytes(for:bufferPolicy:)``,
/// ``SessionManager/dataStreamTask(with:bufferPolicy:eventHandler:)`` and ``SessionManager/events(for:options:)``
/// run. Listed and announced like any data task (`taskDidResume`, `taskDidComplete`); the buffer's pauses
/// are not `suspend()` and post nothing.
final class StreamedDataTask: DataTask, @unchecked Sendable {
    // Safety: adds one immutable, Sendable property to DataTask.

    /// Where the transfers put the body, and where the consumer takes it from.
    let buffer: ResponseBodyBuffer

    init(_ creation: TaskCreation, buffer: ResponseBodyBuffer) {
        self.buffer = buffer
        super.init(creation)
    }

    /// A session's task classes never name this class; a buffer with the default policy that nobody consumes.
    required init(_ creation: TaskCreation) {
        self.buffer = ResponseBodyBuffer(policy: .default) { _ in }
        super.init(creation)
    }

    /// A streamed body has no file to become.
    override var canBecomeDownload: Bool { false }

    /// The body is never collected, so there is nothing to serve from the cache or to store in it.
    override var usesResponseCache: Bool { false }

    override func makeTransferRequest(for request: Request) -> TransferRequest {
        var transfer = super.makeTransferRequest(for: request)
        transfer.sink = .stream(buffer)
        return transfer
    }

    /// Once the consumer has the head, the task completes with that response whatever follows: no redirect
    /// hop, authentication round-trip or retry may put a second response's bytes behind the first's.
    override func proceed(after outcome: TransferOutcome) {
        guard buffer.hasHandedOverHead else { return super.proceed(after: outcome) }
        if let response = outcome.response { session.storeCookies(from: response) }
        completeTransfer(outcome)
    }

    /// No body object: the consumer had the bytes. Any status is a success, as for ``SessionManager/data(for:)``.
    override func completionResult(for outcome: TransferOutcome, serializer: any ResponseSerializer) -> CompletionResult
    {
        if let error = outcome.error { return CompletionResult(error: error) }
        guard outcome.response != nil else {
            return CompletionResult(
                error: HeraldError(
                    .badServerResponse, "The transfer ended without a response.", url: originalRequest.url))
        }
        return CompletionResult()
    }
}
