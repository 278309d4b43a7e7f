import Foundation

/// One event of a streamed data task made with
/// ``SessionManager/dataStreamTask(with:bufferPolicy:eventHandler:)``, in this order: one ``response(_:)``,
/// any number of ``chunk(_:)``, one ``complete(_:)``; or only ``complete(_:)`` when the task failed before a
/// response.
public enum DataStreamEvent: Sendable {
    /// The response head, before its body.
    case response(HTTPResponse)
    /// The next piece of the body, in order.
    case chunk(Data)
    /// The end: `nil` after the whole body, else the task's error (after the chunks that arrived).
    case complete(HeraldError?)
}

// Streamed response bodies: the body goes to its consumer as it arrives, through a bounded buffer whose
// watermarks pause and continue the transfer, instead of being collected.
extension SessionManager {
    /// Sends `request` and returns the response head and the body as an asynchronous sequence of chunks, with
    /// backpressure: Alamofire's `DataStreamRequest` / `streamTask()`, AsyncHTTPClient's streamed body.
    ///
    /// **The task.** One data task of the session, listed in ``tasks`` and announced as every task is:
    /// `taskDidResume`, then exactly one `taskDidComplete` (with no `responseData`: the bytes went to you),
    /// whose ``SessionTask/downloadProgress`` counts every byte. A redirect, an authentication round-trip or
    /// an interceptor's retry may happen before the head reaches you, never after.
    ///
    /// **The head.** Returned when a final response with a status below 300 has its head — before its body,
    /// so a server that sends its head and then waits (server-sent events) answers at once. A response with a
    /// status of 300 or more (which a redirect, a challenge or a retry may still replace) is returned when the
    /// task completes, its body held back until then, unless it reaches the high watermark first. Any status
    /// is a success, for you to check, as for ``data(for:)``.
    ///
    /// **Backpressure.** See ``StreamBufferPolicy``: at most its high watermark waits for you; the pauses that
    /// keep it there are not `suspend()` and post nothing.
    ///
    /// **Cancellation.** Cancelling the calling Swift task while it waits for the head, cancelling the task
    /// that iterates the body, or dropping the sequence before its end cancels the session task: the transfer
    /// stops, and the task completes once, with ``HeraldError/Code/cancelled``.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - bufferPolicy: The watermarks and the largest chunk; default ``StreamBufferPolicy/default``.
    /// - Returns: The response head and its body.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/invalidRequest`` for a malformed request or buffer policy,
    ///   ``HeraldError/Code/cancelled``, a transport error when the task failed before a head,
    ///   ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``.
    public func bytes(
        for request: Request, bufferPolicy: StreamBufferPolicy = .default
    ) async throws(HeraldError) -> (HTTPResponse, ResponseBodyStream) {
        let (consumer, head) = try await openStream(for: request, bufferPolicy: bufferPolicy)
        return (try head.get(), ResponseBodyStream(consumer: consumer))
    }

    /// Sends `request` like ``bytes(for:bufferPolicy:)``, then checks the response head against `validation`
    /// before any body byte is handed over: Alamofire's `validate()` step for a streamed body.
    ///
    /// A head that fails the check throws: the first ``HeraldError/maximumKeptBodyLength`` bytes of its body
    /// are read into the error's ``HeraldError/responseBody`` (with the head in ``HeraldError/response``), then
    /// the task is cancelled. What arrives within ``keptBodyWait`` is kept: a body that trickles or never ends (an
    /// event stream where a document was expected) doesn't hold the call back. The content type is checked only when a body may follow (not for a `204`, a
    /// `304` or `Content-Length: 0`).
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - bufferPolicy: The watermarks and the largest chunk; default ``StreamBufferPolicy/default``.
    ///   - validation: The acceptable status codes and content types.
    /// - Returns: The response head and its body, once the head passed the check.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/unacceptableStatusCode`` or
    ///   ``HeraldError/Code/unacceptableContentType`` with the response and the start of its body, or
    ///   anything ``bytes(for:bufferPolicy:)`` throws.
    public func bytes(
        for request: Request, bufferPolicy: StreamBufferPolicy = .default, validation: ResponseValidation
    ) async throws(HeraldError) -> (HTTPResponse, ResponseBodyStream) {
        let (response, body) = try await bytes(for: request, bufferPolicy: bufferPolicy)
        // A HEAD response has no body whatever its Content-Length says (the content type then describes none).
        let mayHaveBody =
            request.method != "HEAD" && response.statusCode != 204 && response.statusCode != 304
            && response.expectedContentLength != 0
        guard let failure = validation.failure(of: response, hasBody: mayHaveBody) else { return (response, body) }
        let task = body.task
        let deadline = Task {
            try await Task.sleep(for: Self.keptBodyWait)
            task.cancel()
        }
        var kept = Data()
        do {
            for try await chunk in body {
                kept.append(chunk.prefix(HeraldError.maximumKeptBodyLength - kept.count))
                if kept.count >= HeraldError.maximumKeptBodyLength { break }
            }
        } catch {
            // The body ended early, or the wait for it did: the error keeps what arrived.
        }
        deadline.cancel()
        task.cancel()
        // The caller's own cancellation is what it hears, as from any other wait of this call, not the status.
        if Task.isCancelled {
            throw HeraldError(.cancelled, "The request was cancelled.", url: response.url, response: response)
        }
        throw HeraldError(failure.code, failure.message, url: response.url, response: response, responseBody: kept)
    }

    /// How long ``bytes(for:bufferPolicy:validation:)`` reads the body of a response that failed its check,
    /// for the error: 1 second.
    public static let keptBodyWait: Duration = .seconds(1)

    /// Creates a streamed data task, resumes it (or cancels it, when the calling Swift task is cancelled) and
    /// awaits its head. Throws only what creating the task throws; the task's own failure is the head's.
    func openStream(
        for request: Request, bufferPolicy: StreamBufferPolicy
    ) async throws(HeraldError) -> (StreamConsumer, Result<HTTPResponse, HeraldError>) {
        let (task, buffer) = try makeStreamedTask(with: request, bufferPolicy: bufferPolicy)
        let consumer = StreamConsumer(buffer: buffer, task: task)
        if Task.isCancelled { task.cancel() } else { task.resume() }
        let head = await withTaskCancellationHandler {
            await buffer.head()
        } onCancel: {
            task.cancel()
        }
        return (consumer, head)
    }

    /// Creates a suspended data task whose response is handed to `eventHandler` as it arrives, for code that
    /// isn't `async`: Alamofire's `streamRequest(…).responseStream`.
    ///
    /// `eventHandler` runs on ``completionQueue``, one event at a time, in order: ``DataStreamEvent/response(_:)``,
    /// the ``DataStreamEvent/chunk(_:)``s, then ``DataStreamEvent/complete(_:)``. The next chunk waits until
    /// the handler returns, and the transfer pauses while ``StreamBufferPolicy/highWatermark`` bytes wait (the
    /// pauses post nothing): a slow handler slows the sender. The task is announced like any data task; its
    /// `taskDidComplete` may be posted while the last chunks are still being handed to you. ``SessionTask/cancel()``
    /// stops it: the chunks still waiting are dropped, and once the call to the handler running then (if any)
    /// returns, the handler gets ``DataStreamEvent/complete(_:)`` with ``HeraldError/Code/cancelled``.
    /// Which responses are held back until completion, and when hops and retries may happen, is as for
    /// ``bytes(for:bufferPolicy:)``.
    ///
    /// - Parameters:
    ///   - request: The request; validated before anything is sent (see ``Request``).
    ///   - bufferPolicy: The watermarks and the largest chunk; default ``StreamBufferPolicy/default``.
    ///   - eventHandler: Called with each event, on ``completionQueue``.
    /// - Returns: The task, suspended: call ``SessionTask/resume()``.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/invalidRequest`` for a malformed request or buffer policy,
    ///   ``HeraldError/Code/sessionInvalidated`` after ``invalidate(cancelingTasks:)``.
    public func dataStreamTask(
        with request: Request, bufferPolicy: StreamBufferPolicy = .default,
        eventHandler: @escaping @Sendable (DataStreamEvent) -> Void
    ) throws(HeraldError) -> DataTask {
        let (task, buffer) = try makeStreamedTask(with: request, bufferPolicy: bufferPolicy)
        Task.detached { [self] in
            await pumpEvents(from: buffer, to: eventHandler)
        }
        return task
    }

    /// Creates a suspended streamed data task and its buffer, which its completion step ends.
    func makeStreamedTask(
        with request: Request, bufferPolicy: StreamBufferPolicy
    ) throws(HeraldError) -> (DataTask, ResponseBodyBuffer) {
        try bufferPolicy.validate()
        let buffer = ResponseBodyBuffer(policy: bufferPolicy) { [weak self] transfer in
            self?.send(.resumeReceiving(transfer))
        }
        let task = try makeDataTask(
            with: request, bodyHandling: .streamed(buffer),
            callbacks: TaskCallbacks(completion: { response, _, error in buffer.finish(response: response, error: error)
            }))
        return (task, buffer)
    }

    /// Hands `buffer`'s head and chunks to `handler` on the completion queue, one at a time.
    private func pumpEvents(
        from buffer: ResponseBodyBuffer, to handler: @escaping @Sendable (DataStreamEvent) -> Void
    ) async {
        switch await buffer.head() {
        case .failure(let error):
            return await deliver(.complete(error), to: handler)
        case .success(let response):
            await deliver(.response(response), to: handler)
        }
        while true {
            switch await buffer.next() {
            case .success(let chunk?):
                await deliver(.chunk(chunk), to: handler)
            case .success(nil):
                return await deliver(.complete(nil), to: handler)
            case .failure(let error):
                return await deliver(.complete(error), to: handler)
            }
        }
    }

    private func deliver(_ event: DataStreamEvent, to handler: @escaping @Sendable (DataStreamEvent) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            runOnCompletionQueue {
                handler(event)
                continuation.resume()
            }
        }
    }
}
