import Foundation

/// A response body as lines of text, split at LF, CR and CRLF, without the line ends: the
/// ``ResponseBodyStream/lines`` view, like Foundation's `AsyncBytes.lines` on Apple platforms.
///
/// Each line is decoded as UTF-8, an invalid sequence becoming U+FFFD. A last line without a line end is
/// yielded too; an empty body yields no line. Throws as the underlying ``ResponseBodyStream`` does, after
/// the lines that were complete.
public struct ResponseLines: AsyncSequence, Sendable {
    /// A line, without its line end.
    public typealias Element = String
    /// What iteration throws.
    public typealias Failure = HeraldError

    let chunks: ResponseBodyStream

    /// Makes the iterator; one per sequence.
    public func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks.makeAsyncIterator()) }

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

        init(chunks: ResponseBodyStream.Iterator) {
            self.chunks = chunks
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
                    pending.append(contentsOf: bytes[start..<index])
                    ready.append(String(decoding: pending, as: UTF8.self))
                    pending.removeAll(keepingCapacity: true)
                    afterCR = byte == 0x0D
                    start = index + 1
                }
                if start < bytes.count {
                    pending.append(contentsOf: bytes[start..<bytes.count])
                    afterCR = false
                }
            }
        }
    }
}
