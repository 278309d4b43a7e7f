import Foundation

/// A response body as lines of text, split at LF, CR and CRLF, without the line ends: the
/// ``ResponseBodyStream/lines`` view, like Foundation's `AsyncBytes.lines` on Apple platforms.
///
/// Each line is decoded as UTF-8, an invalid sequence becoming U+FFFD. A last line without a line end is
/// yielded too; an empty body yields no line. Throws as the underlying ``ResponseBodyStream`` does, after
/// the lines that were complete. A line longer than its limit (``ResponseBodyStream/lines(maximumLength:)``;
/// ``defaultMaximumLength`` for ``ResponseBodyStream/lines``) is never collected whole: the lines end, after
/// those before it, with ``HeraldError/Code/responseTooLarge``, and the transfer stops if it is still running
/// (a task whose body had all arrived keeps its own outcome).
public struct ResponseLines: AsyncSequence, Sendable {
    /// A line, without its line end.
    public typealias Element = String
    /// What iteration throws.
    public typealias Failure = HeraldError

    /// The longest line ``ResponseBodyStream/lines`` accepts: 16 MiB.
    public static let defaultMaximumLength = 16 << 20

    let chunks: ResponseBodyStream
    /// The most bytes a line may take, without its line end.
    let maximumLength: Int

    /// Makes the iterator; one per sequence.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator(), maximumLength: maximumLength, task: chunks.task)
    }

    /// Yields the lines; see ``ResponseLines``.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseBodyStream.Iterator
        /// Bytes of the line being collected.
        var pending: [UInt8] = []
        /// Lines found in the last chunk and not yet yielded, and where the next starts.
        var ready: [String] = []
        var readyIndex = 0
        /// The last byte seen was a CR: an LF right after it ends nothing.
        var afterCR = false
        var isFinished = false
        let maximumLength: Int
        /// The task whose body this is: stopped with ``HeraldError/Code/responseTooLarge`` when a line is too long.
        let task: DataTask
        /// A line went over ``maximumLength``: thrown once the lines before it are taken.
        var tooLong = false

        init(chunks: ResponseBodyStream.Iterator, maximumLength: Int, task: DataTask) {
            self.chunks = chunks
            self.maximumLength = maximumLength
            self.task = task
        }

        /// The next line, or `nil` after the last.
        /// - Throws: ``HeraldError`` as ``ResponseBodyStream/Iterator/next()`` does.
        public mutating func next() async throws(HeraldError) -> String? {
            try await next(isolation: nil)
        }

        /// The next line, or `nil` after the last, on the caller's isolation.
        /// - Parameter actor: The caller's actor, if any.
        /// - Throws: ``HeraldError`` as ``next()`` does.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(HeraldError) -> String? {
            while true {
                if readyIndex < ready.count {
                    defer { readyIndex += 1 }
                    return ready[readyIndex]
                }
                ready.removeAll(keepingCapacity: true)
                readyIndex = 0
                if tooLong {
                    tooLong = false
                    isFinished = true
                    pending = []
                    // The task completes with the error too, not as cancelled.
                    let error = HeraldError(
                        .responseTooLarge, "A line of the response body is longer than \(maximumLength) bytes.",
                        url: task.originalRequest.url)
                    task.stop(reporting: error)
                    throw error
                }
                if isFinished { return nil }
                guard let chunk = try await chunks.next(isolation: actor) else {
                    isFinished = true
                    guard !pending.isEmpty else { return nil }
                    defer { pending.removeAll() }
                    return String(decoding: pending, as: UTF8.self)
                }
                split(chunk)
            }
        }

        private mutating func split(_ chunk: Data) {
            chunk.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
                var start = 0
                for index in 0..<bytes.count {
                    let byte = bytes[index]
                    guard byte == 0x0A || byte == 0x0D else { continue }
                    if byte == 0x0A, afterCR, index == start, pending.isEmpty {
                        // The LF of a CRLF whose CR ended the previous line.
                        afterCR = false
                        start = index + 1
                        continue
                    }
                    guard pending.count + (index - start) <= maximumLength else {
                        tooLong = true
                        return
                    }
                    pending.append(contentsOf: bytes[start..<index])
                    ready.append(String(decoding: pending, as: UTF8.self))
                    pending.removeAll(keepingCapacity: true)
                    afterCR = byte == 0x0D
                    start = index + 1
                }
                if start < bytes.count {
                    guard pending.count + (bytes.count - start) <= maximumLength else {
                        tooLong = true
                        return
                    }
                    pending.append(contentsOf: bytes[start..<bytes.count])
                    afterCR = false
                }
            }
        }
    }
}
