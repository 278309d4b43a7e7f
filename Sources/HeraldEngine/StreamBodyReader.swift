import Dispatch
import Foundation
import HeraldNotifications

/// Reads a streamed request body — a ``PulledBody`` and the fresh ones that replace it when the body is
/// sent again — on its task's hook queue (``queue``), never on the engine's loop thread, into a
/// small buffer that curl's read callback drains on the loop thread.
///
/// A body stream's `read`, `taskNeedNewBodyStream` and a sized body's `open` are user code, which may be slow
/// or block; the loop thread runs every transfer of its engine and so runs none of it. The reader keeps at
/// most ``capacity`` bytes ahead of curl (constant memory for any body size) and reads one ``chunk`` at a
/// time, one call at a time per stream (its queue is serial, and at most one reader job exists:
/// ``State/isReaderScheduled``).
///
/// The hand-over: when the buffer is empty, ``take(into:)`` answers ``BodySourceRead/wait`` and the read
/// callback returns `CURL_READFUNC_PAUSE` (libcurl then stops calling it); the reader's next bytes, its end or
/// its failure call `wake`, which sends the transfer `bodyAvailable` through the engine's command queue, and
/// the transfer unpauses sending (``Transfer/bodyDidBecomeAvailable()``). End of stream and errors travel
/// through the same buffer, after the bytes read before them.
///
/// Rewinding (``rewind(to:)``) never waits: it discards the buffered bytes and asks the reader for a fresh
/// stream; until its first bytes arrive, ``take(into:)`` answers ``BodySourceRead/wait`` again.
final class StreamBodyReader: @unchecked Sendable {
    // Safety: `shared` is guarded by its lock, and the bytes of `storage` are read and written only while it
    // is held (by the loop thread in `take(into:)`, by the reader in `publish`). `stream`, `produced` and
    // `scratch` belong to the reader job, which runs on `queue`, a serial queue: one job at a time, each
    // ordered after the last.

    /// The most bytes read ahead of curl: one curl upload buffer (64 KiB).
    static let capacity = 64 * 1024
    /// The most bytes one call of a stream's `read` is asked for; the reader reads when this much is free.
    static let chunk = 16 * 1024

    /// Where this body's streams are read: the task's hook queue, a serial queue of its own that libdispatch
    /// runs on its overcommitting pool — a thread of its own whenever it has work. A read that blocks then
    /// holds back only its own task (its hooks wait behind it): not the loop thread, and not the few threads
    /// of the global concurrent pool (one per core) that completion queues share.
    let queue: DispatchQueue

    /// Where the streams come from.
    enum Origin: Sendable {
        /// A stream of unknown length; `renew` makes a fresh one (`nil`: none can be made).
        case unsized(renew: @Sendable () -> PulledBody?)
        /// Exactly `length` bytes; `open` makes a fresh stream from the start.
        case sized(length: Int64, open: @Sendable () throws(TransferError) -> PulledBody)
    }

    private enum Status {
        /// More bytes may come.
        case open
        /// The body is complete once the buffered bytes are taken.
        case ended
        /// The stream failed; the transfer aborts once the buffered bytes are taken.
        case failed(TransferError)
    }

    private struct State {
        /// Where the first buffered byte is in `storage`, and how many bytes are buffered.
        var head = 0
        var count = 0
        var status = Status.open
        /// Counts rewinds: bytes a reader read from an earlier stream are dropped.
        var generation = 0
        /// A rewind the reader has yet to carry out: open a fresh stream and skip this many bytes.
        var pendingRewind: Int64?
        var isReaderScheduled = false
        /// The read callback found nothing to send and paused: the reader's next news wakes it.
        var isConsumerWaiting = false
        var isClosed = false
        var wake: (@Sendable () -> Void)?

        /// Whether a reader job is needed now and none is scheduled; marks one scheduled if so.
        mutating func scheduleReaderIfNeeded() -> Bool {
            guard !isReaderScheduled, !isClosed else { return false }
            let hasWork: Bool
            if pendingRewind != nil {
                hasWork = true
            } else if case .open = status {
                hasWork = StreamBodyReader.capacity - count >= StreamBodyReader.chunk
            } else {
                hasWork = false
            }
            if hasWork { isReaderScheduled = true }
            return hasWork
        }
    }

    /// What the reader does next.
    private enum Step {
        case reopen(generation: Int, skipping: Int64)
        case read(generation: Int)
    }

    /// What one pull from the current stream gave.
    private enum Pulled {
        case bytes(Int)
        case end
        case failed(TransferError)
    }

    private let origin: Origin
    private let shared = Locked(State())
    /// ``capacity`` bytes, used as a ring.
    private let storage: UnsafeMutableRawPointer
    // The reader job's own.
    private var stream: PulledBody?
    /// The bytes the current stream produced.
    private var produced: Int64 = 0
    /// ``chunk`` bytes a stream's `read` fills.
    private let scratch: UnsafeMutableRawPointer

    /// A reader of `first`, the stream at the start of the body, made when the transfer is prepared.
    init(first: PulledBody, origin: Origin, queue: DispatchQueue) {
        self.origin = origin
        self.queue = queue
        stream = first
        storage = .allocate(byteCount: Self.capacity, alignment: 16)
        scratch = .allocate(byteCount: Self.chunk, alignment: 16)
    }

    deinit {
        storage.deallocate()
        scratch.deallocate()
    }

    // MARK: - the loop thread's side

    /// Starts reading ahead; `wake` is called (on the reader's queue) when bytes, the end or a failure
    /// arrive while the read callback waits for them.
    func start(wake: @escaping @Sendable () -> Void) {
        let schedule = shared.withLock { state in
            state.wake = wake
            return state.scheduleReaderIfNeeded()
        }
        if schedule { scheduleReader() }
    }

    /// Copies buffered bytes into `buffer`; with none buffered, the end, the failure, or ``BodySourceRead/wait``
    /// (the caller pauses until `wake`). Loop thread; never runs user code and never waits.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        var schedule = false
        let result = shared.withLock { state -> BodySourceRead in
            defer { schedule = state.scheduleReaderIfNeeded() }
            if state.count > 0 {
                let count = min(state.count, buffer.count)
                let first = min(count, Self.capacity - state.head)
                guard let target = buffer.baseAddress, count > 0 else { return .bytes(0) }
                target.copyMemory(from: storage + state.head, byteCount: first)
                if count > first {
                    (target + first).copyMemory(from: storage, byteCount: count - first)
                }
                state.count -= count
                state.head = state.count == 0 ? 0 : (state.head + count) % Self.capacity
                return .bytes(count)
            }
            switch state.status {
            case .ended: return .end
            case .failed(let error): return .failed(error)
            case .open:
                state.isConsumerWaiting = true
                return .wait
            }
        }
        if schedule { scheduleReader() }
        return result
    }

    /// Drops what was read and has the reader start over from a fresh stream, skipping `offset` bytes of it.
    /// Returns at once: the next ``take(into:)`` waits for the fresh stream's bytes. Loop thread.
    func rewind(to offset: Int64) {
        let schedule = shared.withLock { state in
            state.generation += 1
            state.head = 0
            state.count = 0
            state.status = .open
            state.pendingRewind = offset
            // Whoever sends the body next hears of the fresh stream's first bytes.
            state.isConsumerWaiting = true
            return state.scheduleReaderIfNeeded()
        }
        if schedule { scheduleReader() }
    }

    /// Stops reading: the transfer is over. A read in progress finishes and its bytes are dropped.
    func close() {
        shared.withLock { state in
            state.isClosed = true
            state.wake = nil
        }
    }

    // MARK: - the reader's side (on `queue`)

    private func scheduleReader() {
        queue.async { [self] in runReader() }
    }

    /// One step, then the next in a job of its own: the queue also runs the task's hooks (the answer to a
    /// response that arrives while the body still goes out among them), which then wait for one read at most,
    /// not for a body that a producer slower than the connection keeps going.
    private func runReader() {
        guard let step = nextStep() else { return }
        switch step {
        case .reopen(let generation, let offset):
            reopen(generation: generation, skipping: offset)
        case .read(let generation):
            let pulled = pull(upTo: Self.chunk)
            publish(pulled, generation: generation)
        }
        queue.async { [self] in runReader() }
    }

    /// What to do next, or `nil` when the job ends (it then is no longer scheduled).
    private func nextStep() -> Step? {
        shared.withLock { state in
            if !state.isClosed, let offset = state.pendingRewind {
                state.pendingRewind = nil
                return .reopen(generation: state.generation, skipping: offset)
            }
            guard !state.isClosed, case .open = state.status, Self.capacity - state.count >= Self.chunk else {
                state.isReaderScheduled = false
                return nil
            }
            return .read(generation: state.generation)
        }
    }

    /// Replaces the stream with a fresh one and skips `offset` bytes of it (libcurl only ever rewinds to the
    /// start in practice).
    private func reopen(generation: Int, skipping offset: Int64) {
        stream = nil
        produced = 0
        switch origin {
        case .unsized(let renew):
            stream = renew()
            if stream == nil { return publish(.failed(.noNewBodyStream), generation: generation) }
        case .sized(_, let open):
            do {
                stream = try open()
            } catch {
                return publish(.failed(error), generation: generation)
            }
        }
        while produced < offset {
            switch pull(upTo: Int(min(Int64(Self.chunk), offset - produced))) {
            case .bytes:
                continue
            case .end:
                return publish(
                    .failed(TransferError(.bodyStream, "The new body stream ended before byte \(offset).")),
                    generation: generation)
            case .failed(let error):
                return publish(.failed(error), generation: generation)
            }
        }
    }

    /// Reads up to `limit` bytes of the current stream into `scratch`. Runs the stream's `read`, user code.
    private func pull(upTo limit: Int) -> Pulled {
        guard let stream else { return .failed(TransferError(.bodyStream, "The body stream is gone.")) }
        switch origin {
        case .unsized:
            do {
                let count = try stream.read(UnsafeMutableRawBufferPointer(start: scratch, count: limit))
                guard count != 0 else { return .end }
                // A negative count (a C-style error) is no end: sent as one, the server would take a cut body.
                guard count > 0, count <= limit else {
                    return .failed(
                        TransferError(
                            .bodyStream, "The body stream reported \(count) bytes read into a \(limit)-byte buffer."))
                }
                produced += Int64(count)
                return .bytes(count)
            } catch {
                return .failed(TransferError(.bodyStream, "The body stream failed: \(error)", underlying: error))
            }
        case .sized(let length, _):
            let wanted = Int(min(Int64(limit), length - produced))
            guard wanted > 0 else { return .end }
            do {
                let count = try stream.read(UnsafeMutableRawBufferPointer(start: scratch, count: wanted))
                guard count > 0, count <= wanted else {
                    return .failed(
                        TransferError(
                            .bodyStream,
                            count > 0
                                ? "The body stream reported \(count) bytes read into a \(wanted)-byte buffer."
                                : "The body ended at byte \(produced) of the \(length) it declared."))
                }
                produced += Int64(count)
                // libcurl asks for no byte past the length: the stream's end is checked with its last bytes,
                // which are held back when it has more, so the transfer fails rather than completes.
                if produced == length, case .failed(let error) = probeEnd(of: stream, length: length) {
                    return .failed(error)
                }
                return .bytes(count)
            } catch let error as TransferError {
                return .failed(error)
            } catch {
                return .failed(TransferError(.bodyStream, "The body stream failed: \(error)", underlying: error))
            }
        }
    }

    /// The end of a body of declared length, once all its bytes are read: the stream must end too. One more
    /// byte would mean the length was wrong, and sending the declared bytes alone would drop the rest unseen.
    /// The byte read is not kept: the transfer fails.
    private func probeEnd(of stream: PulledBody, length: Int64) -> Pulled {
        do {
            // Not into `scratch`, which holds the last bytes still to be handed over.
            var byte: UInt8 = 0
            let count = try withUnsafeMutableBytes(of: &byte) { try stream.read($0) }
            guard count == 0 else {
                return .failed(
                    TransferError(
                        .bodyStream,
                        count > 0
                            ? "The body stream has more than the \(length) bytes it declared."
                            : "The body stream reported \(count) bytes read into a 1-byte buffer."))
            }
            return .end
        } catch let error as TransferError {
            return .failed(error)
        } catch {
            return .failed(TransferError(.bodyStream, "The body stream failed: \(error)", underlying: error))
        }
    }

    /// Hands what a pull gave to the loop thread's side, unless a rewind or the transfer's end made it moot,
    /// and wakes the read callback if it waits.
    private func publish(_ pulled: Pulled, generation: Int) {
        let wake = shared.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isClosed, state.generation == generation else { return nil }
            switch pulled {
            case .bytes(let count):
                let tail = (state.head + state.count) % Self.capacity
                let first = min(count, Self.capacity - tail)
                (storage + tail).copyMemory(from: scratch, byteCount: first)
                if count > first {
                    storage.copyMemory(from: scratch + first, byteCount: count - first)
                }
                state.count += count
            case .end:
                state.status = .ended
            case .failed(let error):
                state.status = .failed(error)
            }
            guard state.isConsumerWaiting else { return nil }
            state.isConsumerWaiting = false
            return state.wake
        }
        wake?()
    }
}

/// A body pulled from ``PulledBody``s by a ``StreamBodyReader``: of unknown length (sent chunked; a rewind asks
/// `taskNeedNewBodyStream`) or of a known one (sent with `Content-Length`; a rewind calls `open`). Loop thread.
final class StreamedBodySource: BodySource {
    private let reader: StreamBodyReader
    /// The bytes handed to curl since the body (re)started.
    private var position: Int64 = 0
    let length: Int64?

    init(first: PulledBody, origin: StreamBodyReader.Origin, queue: DispatchQueue) {
        reader = StreamBodyReader(first: first, origin: origin, queue: queue)
        if case .sized(let length, _) = origin { self.length = length } else { length = nil }
    }

    deinit { reader.close() }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        let result = reader.take(into: buffer)
        if case .bytes(let count) = result { position += Int64(count) }
        return result
    }

    func rewind(to offset: Int64) -> TransferError? {
        if offset == position { return nil }
        guard offset >= 0, offset <= length ?? Int64.max else {
            return TransferError(.bodyStream, "Cannot seek the request body to byte \(offset).")
        }
        reader.rewind(to: offset)
        position = offset
        return nil
    }

    func startReading(wake: @escaping @Sendable () -> Void) { reader.start(wake: wake) }

    func stopReading() { reader.close() }
}

extension TransferError {
    /// A streamed body must be sent again, and no fresh stream was given for it.
    static var noNewBodyStream: TransferError {
        TransferError(
            .bodyStream,
            "The request body must be sent again (after a redirect, an authentication challenge or a dropped "
                + "connection), but a streamed body cannot be rewound and SessionManager.taskNeedNewBodyStream "
                + "provided no new stream.")
    }
}
