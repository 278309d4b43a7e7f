import Foundation

/// A response body as an asynchronous sequence of chunks, in the order they arrived: what
/// ``SessionManager/bytes(for:bufferPolicy:)`` returns.
///
/// Iterate it once, from one Swift task. Each element is one or more of curl's reads joined, at most
/// ``StreamBufferPolicy/maximumChunkSize`` bytes. The sequence ends after the last byte when the task
/// completes successfully, and throws the task's ``HeraldError`` after the last byte that arrived when it
/// fails (a connection lost mid-body: ``HeraldError/Code/networkConnectionLost``).
///
/// **Backpressure.** Once ``StreamBufferPolicy/highWatermark`` bytes wait for you, the transfer stops reading
/// from the socket until you have taken them down to the low watermark. The check comes before each of libcurl's
/// reads, so the read that crosses the mark is kept whole, and the next read is paused and held by libcurl:
/// about the high watermark plus two of libcurl's reads (up to 1 MiB beyond it) are held. A slow consumer slows
/// the sender instead of growing memory (over HTTP/2, only once libcurl holds a stream window of the paused
/// stream's data: see ``StreamBufferPolicy``).
///
/// **Cancellation.** Cancelling the Swift task that iterates, or dropping the sequence and its iterator
/// before the end, cancels the ``task``: the transfer stops and the task completes once, with
/// ``HeraldError/Code/cancelled``. A cancelled iteration throws ``HeraldError/Code/cancelled`` at once.
/// Breaking out of a loop over it is not dropping it while a variable still holds it: call `task.cancel()`
/// when you stop reading early (the chunks still waiting are dropped, and the next element is the error).
public struct ResponseBodyStream: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = Data
    /// What iteration throws.
    public typealias Failure = HeraldError

    let consumer: StreamConsumer

    /// The session task that runs the transfer: its ``SessionTask/downloadProgress`` counts every byte, and
    /// ``SessionTask/suspend()`` and ``SessionTask/resume()`` pause and continue it (posting
    /// `taskDidSuspend` and `taskDidResume`, as for any task).
    public var task: DataTask { consumer.task }

    /// The body as lines of text: see ``ResponseLines``. A line may be up to
    /// ``ResponseLines/defaultMaximumLength`` bytes (16 MiB); a longer one ends the lines with
    /// ``HeraldError/Code/responseTooLarge``.
    public var lines: ResponseLines { ResponseLines(chunks: self, maximumLength: ResponseLines.defaultMaximumLength) }

    /// The body as lines of text of at most `maximumLength` bytes each: see ``ResponseLines``.
    /// - Parameter maximumLength: The most bytes a line may take, without its line end (at least 1); a longer
    ///   line ends the lines with ``HeraldError/Code/responseTooLarge`` and stops the transfer if it is still
    ///   running (a task that already finished keeps its outcome).
    public func lines(maximumLength: Int) -> ResponseLines {
        ResponseLines(chunks: self, maximumLength: Swift.max(1, maximumLength))
    }

    /// Makes the iterator; one per sequence.
    public func makeAsyncIterator() -> Iterator { Iterator(consumer: consumer) }

    /// Yields the chunks; see ``ResponseBodyStream``.
    public struct Iterator: AsyncIteratorProtocol {
        let consumer: StreamConsumer

        /// The next chunk, or `nil` after the last.
        /// - Throws: ``HeraldError``: the task's error after the last chunk that arrived, or
        ///   ``HeraldError/Code/cancelled`` when the iterating Swift task is cancelled.
        public mutating func next() async throws(HeraldError) -> Data? {
            try await consumer.next()
        }

        /// The next chunk, or `nil` after the last, on the caller's isolation.
        /// - Parameter actor: The caller's actor, if any.
        /// - Throws: ``HeraldError`` as ``next()`` does.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(HeraldError) -> Data? {
            try await consumer.next()
        }
    }
}

/// What a ``ResponseBodyStream`` and its iterator share: the buffer and the task. Dropping the last of them
/// cancels the task (nothing once it completed).
final class StreamConsumer: Sendable {
    let buffer: ResponseBodyBuffer
    let task: DataTask

    init(buffer: ResponseBodyBuffer, task: DataTask) {
        self.buffer = buffer
        self.task = task
    }

    deinit { task.cancel() }

    func next() async throws(HeraldError) -> Data? {
        if Task.isCancelled {
            task.cancel()
            throw SessionTask.cancellation(for: task.originalRequest.url)
        }
        let result = await withTaskCancellationHandler {
            await buffer.next()
        } onCancel: {
            task.cancel()
            // At once, also when the task has just completed and its end is still on its way to the buffer.
            buffer.stop(with: SessionTask.cancellation(for: task.originalRequest.url))
        }
        return try result.get()
    }
}
