import Foundation
import HeraldNotifications

/// A request body produced on demand, for streamed uploads whose length is not known up front (sent with
/// `Transfer-Encoding: chunked`).
///
/// Herald pulls bytes by calling the stream's read closure **on the engine's loop thread**, whenever the
/// connection can take more. The closure must return promptly — it shares the thread with every other
/// transfer of the engine — and must never wait for data that another thread has yet to produce.
///
/// A stream is read once, from the start. When a body must be sent again (a 307/308 redirect, an
/// authentication round-trip, or a reused connection that closed before the body was accepted), Herald
/// asks ``SessionManager/taskNeedNewBodyStream`` for a fresh stream; without one, the task fails with
/// ``HeraldError/Code/bodyStream``.
public struct BodyStream: Sendable {
    let read: @Sendable (UnsafeMutableRawBufferPointer) throws -> Int

    /// Creates a stream from a read function.
    ///
    /// - Parameter read: Copies up to `buffer.count` bytes into `buffer` and returns how many it copied;
    ///   returning 0 ends the body. Throwing fails the task with ``HeraldError/Code/bodyStream`` and the
    ///   thrown error as ``HeraldError/underlying``. Runs on the engine's loop thread, one call at a time.
    public init(read: @escaping @Sendable (_ buffer: UnsafeMutableRawBufferPointer) throws -> Int) {
        self.read = read
    }

    /// A stream that yields the bytes of `data`, once.
    ///
    /// - Parameter data: The body.
    public init(data: Data) {
        let offset = Locked(0)
        self.init { buffer in
            offset.withLock { offset in
                let count = min(buffer.count, data.count - offset)
                guard count > 0 else { return 0 }
                let start = data.startIndex + offset
                data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
                offset += count
                return count
            }
        }
    }
}
