import Foundation
import HeraldNotifications
import HeraldEngine

/// A request body produced on demand, for streamed uploads: sent with `Transfer-Encoding: chunked`, or with
/// `Content-Length` when the request declares one (see
/// ``SessionManager/uploadTask(withStreamedRequest:bodyProvider:progress:completionHandler:)``).
///
/// Herald calls the stream's read closure on the upload task's hook queue (`herald.hooks`, a serial queue of
/// the task's own, where its hooks run) — never on the engine's loop thread, never on ``SessionManager/completionQueue``
/// — one call at a time. It reads ahead of the connection into a small buffer (at most 64 KiB
/// per upload, whatever the body's size) and sending waits, paused, while the buffer is empty. So a read
/// may take its time or block waiting for data another thread produces: that holds back its own upload
/// only, never another transfer. A read that doesn't return keeps its upload waiting until the request
/// timeout (no byte moved) or a `cancel()`.
///
/// A stream is read once, from the start. When a body must be sent again (a 307/308 redirect, an
/// authentication round-trip, or a reused connection that closed before the body was accepted), Herald
/// asks ``SessionManager/taskNeedNewBodyStream`` for a fresh stream, off the loop thread too; without one,
/// the task fails with ``HeraldError/Code/bodyStream``.
public struct BodyStream: Sendable {
    let read: @Sendable (UnsafeMutableRawBufferPointer) throws -> Int

    /// Creates a stream from a read function.
    ///
    /// - Parameter read: Copies up to `buffer.count` bytes into `buffer` and returns how many it copied;
    ///   returning 0 ends the body. A negative count, or more than `buffer.count`, fails the task with
    ///   ``HeraldError/Code/bodyStream``. Throwing fails the task with ``HeraldError/Code/bodyStream`` and the
    ///   thrown error as ``HeraldError/underlying``. Runs on the upload task's hook queue, one call at a
    ///   time, never on the engine's loop thread.
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
