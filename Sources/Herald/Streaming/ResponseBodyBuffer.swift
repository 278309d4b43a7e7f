import Foundation
import HeraldNotifications
import HeraldEngine

/// The bounded buffer between a streamed data task's transfers (the producer, on the engine's loop thread)
/// and the consumer of its ``ResponseBodyStream``.
///
/// A final response with a status below 300 is handed to the consumer as soon as its head ends: its head, then
/// its body bytes as they arrive. The body of any other response (a redirect, an authentication challenge, an
/// error a retrier may retry) is held back until the task completes, so that a next hop or a retry can still
/// replace it; a held body that reaches the high watermark is handed over instead, and from then on it is the
/// task's response. Once the head is out, the task neither follows another hop nor retries: a consumer never
/// sees bytes of two responses.
///
/// Backpressure: the write callback asks ``isFull(pausing:)`` before each chunk; at the high watermark the
/// buffer keeps the transfer and the callback pauses curl; the consumer taking bytes down to the low watermark
/// sends the transfer `resumeReceiving` through `resume`.
final class ResponseBodyBuffer: Sendable {
    let policy: StreamBufferPolicy
    /// Sends the engine `resumeReceiving` for a transfer paused for the consumer.
    private let resume: @Sendable (Transfer) -> Void
    private let state: Locked<State>

    private struct State {
        /// Handed over, in order, from `firstChunk` on; then `tail`. Taken from the front by moving `firstChunk`:
        /// removing the first of many small elements would move all the others, under the lock the loop thread
        /// writes through.
        var chunks: [Data] = []
        /// Where in `chunks` the elements not yet taken begin.
        var firstChunk = 0
        /// Whether elements wait in `chunks`.
        var hasChunks: Bool { firstChunk < chunks.count }
        /// Handed-over bytes collecting into the next element.
        var tail = Data()
        /// Bytes in `chunks` and `tail`.
        var waiting = 0
        /// The current response's body while it is held back; `nil` while bytes go to the consumer.
        var held: Data?
        /// The current response while its body is held back.
        var heldResponse: HTTPResponse?
        /// The head given to the consumer: set once.
        var head: HTTPResponse?
        /// How the stream ended, once the task completed.
        var end: Result<Void, HeraldError>?
        var headWaiter: ParkedContinuation<Result<HTTPResponse, HeraldError>>?
        var consumer: ParkedContinuation<Result<Data?, HeraldError>>?
        /// The transfer whose write callback paused for the consumer.
        var paused: Transfer?
        /// Bytes the consumer has taken.
        var taken: Int64 = 0
    }

    init(policy: StreamBufferPolicy, resume: @escaping @Sendable (Transfer) -> Void) {
        self.policy = policy
        self.resume = resume
        self.state = Locked(State())
    }

    // MARK: - the producer (loop thread)

    /// A final head ended: a status below 300 goes to the consumer now.
    func headDidEnd(_ response: HTTPResponse) {
        guard response.statusCode < 300 else { return }
        let waiter = state.withLock { state -> ParkedContinuation<Result<HTTPResponse, HeraldError>>? in
            guard state.head == nil else { return nil }
            return Self.handOver(response, in: &state)
        }
        waiter?.resume(returning: .success(response))
    }

    /// The body of `response` begins (at its first byte, or at the end of a transfer without one).
    func begin(_ response: HTTPResponse) {
        let waiter = state.withLock { state -> ParkedContinuation<Result<HTTPResponse, HeraldError>>? in
            // Once a head is out, the task has no further hop: this is the same response.
            guard state.head == nil else { return nil }
            if response.statusCode < 300 { return Self.handOver(response, in: &state) }
            // What an earlier response of the task left held is replaced.
            state.held = Data()
            state.heldResponse = response
            return nil
        }
        waiter?.resume(returning: .success(response))
    }

    /// Whether the consumer is behind (at the high watermark); if so, keeps `transfer` for the drain.
    package func isFull(pausing transfer: Transfer) -> Bool {
        let (full, waiter, response) = state.withLock {
            state -> (Bool, ParkedContinuation<Result<HTTPResponse, HeraldError>>?, HTTPResponse?) in
            var waiter: ParkedContinuation<Result<HTTPResponse, HeraldError>>?
            var response: HTTPResponse?
            if let held = state.held, held.count >= policy.highWatermark, let heldResponse = state.heldResponse {
                // Too large to hold back: the held response becomes the task's, and its body flows.
                waiter = Self.handOver(heldResponse, in: &state)
                response = heldResponse
                Self.append(held, to: &state, maximumChunkSize: policy.maximumChunkSize)
            }
            guard state.held == nil, state.waiting >= policy.highWatermark else { return (false, waiter, response) }
            state.paused = transfer
            return (true, waiter, response)
        }
        if let waiter, let response { waiter.resume(returning: .success(response)) }
        return full
    }

    /// Bytes of the current response's body; dropped once the stream has ended (a cancel ends it before the
    /// engine has stopped the transfer).
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        // Whole elements are copied out of libcurl's buffer before the lock is taken, so that a consumer taking
        // elements meanwhile never waits on a copy (a read is up to 512 KiB); the rest, less than an element,
        // joins the tail under the lock.
        let maximumChunkSize = policy.maximumChunkSize
        let wholeBytes = bytes.count - bytes.count % maximumChunkSize
        let whole = stride(from: 0, to: wholeBytes, by: maximumChunkSize).map { offset in
            Data(bytes: base + offset, count: maximumChunkSize)
        }
        let handOff = state.withLock { state -> (ParkedContinuation<Result<Data?, HeraldError>>, Data)? in
            if state.end != nil { return nil }
            if state.held != nil {
                state.held?.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
                return nil
            }
            if !whole.isEmpty {
                // After what the tail holds, in order.
                if !state.tail.isEmpty {
                    state.chunks.append(state.tail)
                    state.tail = Data()
                }
                state.chunks.append(contentsOf: whole)
            }
            // Into the tail up to the largest element, the rest into the next.
            var offset = wholeBytes
            while offset < bytes.count {
                if state.tail.isEmpty { state.tail.reserveCapacity(min(maximumChunkSize, 64 << 10)) }
                let count = min(bytes.count - offset, maximumChunkSize - state.tail.count)
                state.tail.append((base + offset).assumingMemoryBound(to: UInt8.self), count: count)
                offset += count
                if state.tail.count == maximumChunkSize {
                    state.chunks.append(state.tail)
                    state.tail = Data()
                }
            }
            state.waiting += bytes.count
            guard let consumer = state.consumer, let chunk = Self.takeChunk(from: &state) else { return nil }
            state.consumer = nil
            return (consumer, chunk)
        }
        // Taken straight from a write: the consumer was waiting, so the buffer was empty and nobody is paused.
        handOff?.0.resume(returning: .success(handOff?.1))
    }

    // MARK: - the task

    /// The task completed with `response` and `error` (its completion step, on the completion queue): a body
    /// still held back goes to the consumer now, then the end.
    func finish(response: HTTPResponse?, error: HeraldError?) {
        let (headWaiter, head, consumer, next) = state.withLock {
            state -> (
                ParkedContinuation<Result<HTTPResponse, HeraldError>>?, Result<HTTPResponse, HeraldError>?,
                ParkedContinuation<Result<Data?, HeraldError>>?, Result<Data?, HeraldError>?
            ) in
            guard state.end == nil else { return (nil, nil, nil, nil) }
            var headWaiter: ParkedContinuation<Result<HTTPResponse, HeraldError>>?
            var head: Result<HTTPResponse, HeraldError>?
            if state.head == nil {
                if error == nil, let response {
                    // Held for the last response begun, which a task that completes without an error
                    // completes with.
                    let held = state.held
                    headWaiter = Self.handOver(response, in: &state)
                    head = .success(response)
                    if let held { Self.append(held, to: &state, maximumChunkSize: policy.maximumChunkSize) }
                } else {
                    headWaiter = state.headWaiter
                    state.headWaiter = nil
                    head = .failure(error ?? HeraldError(.badServerResponse, "The transfer ended without a response."))
                }
            }
            state.held = nil
            state.heldResponse = nil
            state.paused = nil
            if error?.code == .cancelled {
                // Cancelled: what still waits is not handed out; the consumer's next element is the error.
                Self.dropWaiting(in: &state)
            }
            state.end = error.map { .failure($0) } ?? .success(())
            guard let consumer = state.consumer else { return (headWaiter, head, nil, nil) }
            state.consumer = nil
            return (headWaiter, head, consumer, Self.next(from: &state))
        }
        if let headWaiter, let head { headWaiter.resume(returning: head) }
        if let consumer, let next { consumer.resume(returning: next) }
    }

    /// The task was stopped (its `cancel()`, or the session's refusal of a stream), or the consuming Swift task
    /// was cancelled: what still waits is dropped now, and the consumer's next element, or the head it waits for,
    /// is `error`, without waiting for the task's completion (which would find the stream ended). A stream that
    /// has already ended keeps its end.
    func stop(with error: HeraldError) {
        let (headWaiter, consumer) = state.withLock {
            state -> (
                ParkedContinuation<Result<HTTPResponse, HeraldError>>?, ParkedContinuation<Result<Data?, HeraldError>>?
            ) in
            guard state.end == nil else { return (nil, nil) }
            Self.dropWaiting(in: &state)
            state.held = nil
            state.heldResponse = nil
            state.paused = nil
            state.end = .failure(error)
            defer {
                state.headWaiter = nil
                state.consumer = nil
            }
            return (state.headWaiter, state.consumer)
        }
        headWaiter?.resume(returning: .failure(error))
        consumer?.resume(returning: .failure(error))
    }

    // MARK: - the consumer

    /// The response head, once a final response is handed over, or the error the task completed with first.
    func head() async -> Result<HTTPResponse, HeraldError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<HTTPResponse, HeraldError>? in
                if let head = state.head { return .success(head) }
                if case .failure(let error) = state.end { return .failure(error) }
                state.headWaiter = ParkedContinuation(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The next element, `nil` at the end, or the error the task completed with after the last element.
    func next() async -> Result<Data?, HeraldError> {
        // What is waiting is taken without suspending: a continuation resumed at once would still put the
        // consuming task back on its executor, a thread wake-up for every element of a body arriving faster
        // than it is consumed.
        let (result, wake): (Result<Data?, HeraldError>, Transfer?)
        if let ready = takeReady() {
            (result, wake) = ready.withDrain(of: self)
        } else {
            (result, wake) = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Data?, HeraldError>, Never>) in
                // Asked again: bytes or the end may have come since.
                if let ready = takeReady(parking: continuation) { continuation.resume(returning: ready) }
            }.withDrain(of: self)
        }
        if let wake { resume(wake) }
        return result
    }

    /// The next element or the end, when either is there to take; otherwise `nil`, and `continuation`, if
    /// given, waits for the next write or the end.
    private func takeReady(
        parking continuation: CheckedContinuation<Result<Data?, HeraldError>, Never>? = nil
    ) -> Result<Data?, HeraldError>? {
        state.withLock { state in
            if !state.hasChunks, state.tail.isEmpty, state.end == nil {
                guard let continuation else { return nil }
                // One consumer at a time: a second one parked here would replace the first, which would then
                // wait for ever. It fails instead, and the first goes on.
                if state.consumer != nil { return .failure(Self.secondConsumer) }
                state.consumer = ParkedContinuation(continuation)
                return nil
            }
            return Self.next(from: &state)
        }
    }

    /// What a consumer gets that asks while another waits for the same body.
    private static let secondConsumer = HeraldError(
        .invalidRequest,
        "The body is already being read by another iteration: read a streamed body once, from one task.")

    /// Whether the consumer has the head: from then on the task's response is fixed.
    var hasHandedOverHead: Bool { state.withLock { $0.head != nil } }

    /// Bytes handed over and not yet taken, for tests.
    var waitingByteCount: Int { state.withLock { $0.waiting } }

    /// Whether the write callback paused the transfer for the consumer and the buffer keeps it for the
    /// drain, for tests.
    var isHoldingTransfer: Bool { state.withLock { $0.paused != nil } }

    /// After the consumer took an element: the transfer to continue, when the bytes waiting fell to the low
    /// watermark.
    fileprivate func drained() -> Transfer? {
        state.withLock { state in
            guard let paused = state.paused, state.waiting <= policy.lowWatermark else { return nil }
            state.paused = nil
            return paused
        }
    }

    // MARK: - helpers (under the lock)

    private static func handOver(
        _ response: HTTPResponse, in state: inout State
    ) -> ParkedContinuation<Result<HTTPResponse, HeraldError>>? {
        state.head = response
        state.held = nil
        state.heldResponse = nil
        defer { state.headWaiter = nil }
        return state.headWaiter
    }

    private static func append(_ bytes: Data, to state: inout State, maximumChunkSize: Int) {
        guard !bytes.isEmpty else { return }
        if !state.tail.isEmpty {
            state.chunks.append(state.tail)
            state.tail = Data()
        }
        // Each element is a `Data` of its own, indexed from 0 as every other element is: a slice would keep
        // the held body's indices (a consumer's `chunk[0]` would trap) and the whole held body alive.
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = min(start + maximumChunkSize, bytes.endIndex)
            state.chunks.append(start == 0 && end == bytes.endIndex ? bytes : Data(bytes[start..<end]))
            start = end
        }
        state.waiting += bytes.count
    }

    private static func takeChunk(from state: inout State) -> Data? {
        let chunk: Data
        if state.hasChunks {
            chunk = state.chunks[state.firstChunk]
            state.chunks[state.firstChunk] = Data()
            state.firstChunk += 1
            if state.firstChunk == state.chunks.count {
                state.chunks.removeAll(keepingCapacity: true)
                state.firstChunk = 0
            } else if state.firstChunk >= 64, state.firstChunk * 2 >= state.chunks.count {
                // The taken half goes, in one move of the half that remains.
                state.chunks.removeFirst(state.firstChunk)
                state.firstChunk = 0
            }
        } else if !state.tail.isEmpty {
            chunk = state.tail
            state.tail = Data()
        } else {
            return nil
        }
        state.waiting -= chunk.count
        state.taken += Int64(chunk.count)
        return chunk
    }

    private static func dropWaiting(in state: inout State) {
        state.chunks.removeAll()
        state.firstChunk = 0
        state.tail = Data()
        state.waiting = 0
    }

    private static func next(from state: inout State) -> Result<Data?, HeraldError> {
        if let chunk = takeChunk(from: &state) { return .success(chunk) }
        switch state.end {
        case .failure(let error): return .failure(error)
        case .success, nil: return .success(nil)
        }
    }
}

extension Result where Success == Data?, Failure == HeraldError {
    /// The element, with the transfer to continue if taking it drained the buffer to its low watermark.
    fileprivate func withDrain(of buffer: ResponseBodyBuffer) -> (Self, Transfer?) {
        guard case .success(.some) = self else { return (self, nil) }
        return (self, buffer.drained())
    }
}

extension ResponseBodyBuffer: StreamedBodyConsumer {
    package func headDidEnd(_ head: ResponseHead) {
        headDidEnd(HTTPResponse(head))
    }

    package func begin(_ head: ResponseHead) {
        begin(HTTPResponse(head))
    }
}

/// A consumer's continuation, parked for the producer to resume, and whether it must be resumed off the
/// producer's thread. The producer is the engine's loop thread (the write and header callbacks); a task that
/// prefers a task executor has its continuation's job enqueued on that executor by whoever resumes it, and an
/// executor's `enqueue` is user code, which never runs on the loop thread. Any other task's resumption only
/// queues the job on the global executor, and stays where it is.
struct ParkedContinuation<Value: Sendable>: Sendable {
    private let continuation: CheckedContinuation<Value, Never>
    private let resumesOffLoopThread: Bool

    /// Parks `continuation`; in the consuming task, which says whether it prefers a task executor.
    init(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation = continuation
        self.resumesOffLoopThread = !SessionManager.callerResumesOnGlobalExecutor
    }

    func resume(returning value: Value) {
        guard resumesOffLoopThread else { return continuation.resume(returning: value) }
        let continuation = continuation
        DispatchQueue.global().async { continuation.resume(returning: value) }
    }
}
