import Dispatch
import Foundation
import HeraldEngine

/// What a completed task reports: to its completion handler and in the `taskDidComplete` payload.
struct CompletionResult: Sendable {
    /// The completion handler's second argument: the serialized response, or a download's file URL.
    var handlerObject: (any Sendable)?
    /// ``TaskCompletion/serializedResponse``.
    var serializedResponse: (any Sendable)?
    /// ``TaskCompletion/responseData``.
    var responseData: Data?
    /// ``TaskCompletion/assetPath``.
    var assetPath: URL?
    /// The error the task completes with.
    var error: HeraldError?
    /// ``TaskCompletion/fileWasMoved``.
    var fileWasMoved = false
    /// Answers a ``DownloadTask/cancel(byProducingResumeData:)``: runs just before the completion handler.
    var resumeDataAnswer: (@Sendable () -> Void)?

    init(
        handlerObject: (any Sendable)? = nil, serializedResponse: (any Sendable)? = nil, responseData: Data? = nil,
        assetPath: URL? = nil, error: HeraldError? = nil, fileWasMoved: Bool = false
    ) {
        self.handlerObject = handlerObject
        self.serializedResponse = serializedResponse
        self.responseData = responseData
        self.assetPath = assetPath
        self.error = error
        self.fileWasMoved = fileWasMoved
    }

    /// The serializer's output, or the error the task completes with. A transport error wins; the
    /// serializer only sees transfers that produced a response.
    static func serialize(
        _ outcome: TaskOutcome, with serializer: any ResponseSerializer, url: URL
    ) -> ((any Sendable)?, HeraldError?) {
        if let error = outcome.error { return (nil, error) }
        guard let response = outcome.response else {
            return (nil, HeraldError(.badServerResponse, "The transfer ended without a response.", url: url))
        }
        do throws(HeraldError) {
            return (try serializer.serializeErased(response: response, data: outcome.body), nil)
        } catch {
            return (nil, error.adding(metrics: outcome.metrics))
        }
    }
}

extension SessionManager {
    /// Hands a completed task's outcome to the completion queue: the one hand-off between the task's state
    /// machine (on the loop thread, or wherever a hook, a cancel or a resume completed it) and its
    /// completion handler. Any thread; no lock held.
    ///
    /// On the session's own (serial) completion queue, a block in ``completionGroup`` serializes the outcome
    /// (or moves a download), stores a cacheable response, runs the `taskDidComplete` hook and the completion
    /// handler, then has the event queue forget the task and post `taskDidComplete` (AF's order). From the
    /// loop thread, the tasks one loop iteration completes go in one such block, dispatched at the
    /// iteration's end: a burst of responses costs the completion queue one enqueue, not one each (at 64
    /// requests at a time, about a quarter of the CPU per request), and the notifications that block hands to
    /// the event queue wake it once (``SessionEventPoster/holdingWakeUps(over:limit:_:)``). The task's
    /// progress and body blocks were dispatched to the queue before it, so they run first. With a completion
    /// queue the caller passed in, each completion's serialization runs first on the hook queue — the
    /// caller's queue (perhaps the main queue) is not the place for parsing or file moves — and the rest on
    /// the caller's queue: one hand-off more. That serialization runs on a serial queue of its own, labelled as
    /// a hook queue, not the task's: a cancel or a timeout completes a task while one of its hooks (a redirect
    /// or challenge hook asking a person, a streamed body's read) may still block its hook queue, and the
    /// completion must not wait for it.
    ///
    /// A task whose completion handler only resumes an `async` caller (``SessionManager/data(for:)``, the
    /// `upload(for:…)` forms)
    /// completes without the completion queue when nothing else of the caller's is queued for it there
    /// (``answersInline(_:)``) and it completes alone: on the thread that completed it, or at the end of a loop
    /// iteration that completed no other task. Its completion step is then library code that never waits
    /// (the state machine, the raw body as the result, resuming the caller's continuation, which enqueues the
    /// caller on the global executor), and the hand-off to the completion queue, a thread wake-up per
    /// request, would only add a second one before the caller's own. An iteration that completed several
    /// tasks still hands them over in one block: resuming each caller from the loop thread wakes more threads
    /// than the completion queue resuming them in a row.
    func complete(_ task: SessionTask, with outcome: TaskOutcome) {
        guard ownsCompletionQueue else {
            // The task's hook queue may be held by a hook or a body stream's read that blocks, which a cancel or a
            // timeout must not wait for: the completion is serialized on a serial queue of its own.
            let queue = DispatchQueue(label: "herald.hooks", qos: .userInitiated)
            // Its `destination` and download hooks may call invalidateAndWait(timeout:), which can't wait here.
            queueMarker.mark(queue)
            queue.async(group: completionGroup) { [self] in
                let serializer = responseSerializer
                let result = task.completionResult(for: outcome, serializer: serializer)
                completionQueue.async(group: completionGroup) { [self] in
                    finishCompletion(task, outcome: outcome, result: result, serializer: serializer)
                }
            }
            return
        }
        let completion = CompletedTask(task: task, outcome: outcome)
        guard engine.isOnLoopThread else {
            if answersInline(task) { return run(completion) }
            completionQueue.async(group: completionGroup) { [self] in run(completion) }
            return
        }
        let isFirst = completedInIteration.withLock { completed in
            completed.append(completion)
            return completed.count == 1
        }
        if isFirst { engine.atIterationEnd { [self] in dispatchCompletedInIteration() } }
    }

    /// Whether `task`'s completion handler only resumes an `async` caller and no code of the caller's is to run
    /// on the completion queue for its completion: no hook that runs there for a data task, no progress
    /// handler (or progress observer) of the task, no response cache. The session owns its completion queue
    /// and has no ``completionGroup`` (whose waiters count on every completion step entering it). Asked once
    /// the task has completed, when its handlers can no longer change.
    private func answersInline(_ task: SessionTask) -> Bool {
        guard task.answersAwaitingCaller, completionGroup == nil else { return false }
        // Any task may touch the cache: an unsafe method's success invalidates stored responses.
        guard configuration.responseCache == nil else { return false }
        let noHooks = readHooks { hooks in
            hooks.taskDidComplete == nil && hooks.dataTaskDidReceiveData == nil && hooks.taskDidSendBodyData == nil
        }
        guard noHooks else { return false }
        return task.machine { $0.progressHandler(upload: true) == nil && $0.progressHandler(upload: false) == nil }
    }

    /// Dispatches the tasks the loop iteration completed, in one block. Loop thread, at the iteration's end.
    private func dispatchCompletedInIteration() {
        let completed = completedInIteration.withLock { completed in
            defer { completed = [] }
            return completed
        }
        if completed.count == 1, answersInline(completed[0].task) { return run(completed[0]) }
        completionQueue.async(group: completionGroup) { [self] in
            eventPoster.holdingWakeUps(over: completed) { run($0) }
        }
    }

    /// Serializes a completed task's outcome and finishes it. The session's own completion queue, or where a
    /// task that ``answersInline(_:)`` completed alone.
    private func run(_ completion: CompletedTask) {
        let serializer = responseSerializer
        let result = completion.task.completionResult(for: completion.outcome, serializer: serializer)
        finishCompletion(completion.task, outcome: completion.outcome, result: result, serializer: serializer)
    }

    /// Stores a cacheable response (see ``ResponseCache``), as `dataTaskWillCacheResponse` allows.
    /// Completion queue, before the completion handler.
    private func store(_ outcome: TaskOutcome, of task: DataTask, in cache: any ResponseCache) {
        guard !outcome.isFromCache, outcome.error == nil, task.originalRequest.method == "GET" else { return }
        // The header fields of the last attempt as the adapter made it (an `Authorization` an interceptor adds
        // keeps the answer out too), on the task's own URL, which lookups use.
        var judged = task.originalRequest
        if let adapted = task.machine({ $0.hops.attemptRequest }) { judged.headers = adapted.headers }
        let sent = requestAsSent(judged)
        if let response = outcome.response, !ResponseCachePolicy.supersedesStored(response, for: sent) {
            // The entry stays; a `304` to the caller's own validators freshens the one it confirms.
            guard keeps(outcome, of: task, sent: sent) else { return }
            switch ResponseCachePolicy.freshened(for: sent, by: response, in: cache) {
            case .none:
                return
            case .remove:
                return cache.removeCachedResponse(for: task.originalRequest)
            case .store(let freshened):
                guard let entry = dataTaskWillCacheResponse.map({ $0(task, freshened) }) ?? freshened else { return }
                return cache.storeCachedResponse(entry, for: sent)
            }
        }
        let proposal =
            keeps(outcome, of: task, sent: sent) ? ResponseCachePolicy.proposal(for: sent, outcome: outcome) : nil
        guard let proposal, let entry = dataTaskWillCacheResponse.map({ $0(task, proposal) }) ?? proposal else {
            // The network answered anew and its answer is not kept: neither is an older one. A server error
            // says nothing of the resource (a cache may act as if the server hadn't answered): the entry stays,
            // for a request that accepts it stale and for the next revalidation.
            if !(500...599).contains(outcome.response?.statusCode ?? 0) {
                cache.removeCachedResponse(for: task.originalRequest)
            }
            return
        }
        cache.storeCachedResponse(entry, for: sent)
    }

    /// Whether the session may keep `outcome` for the request it stores it under, beyond the cache's own rules
    /// (``ResponseCachePolicy/proposal(for:outcome:now:)``, which sees `sent`): not an answer reached through a
    /// redirect (it is another URL's, and the redirect itself is not stored), not one to a credential the
    /// session sent for a challenge, and not one that varies on `Cookie` when the session added the cookies
    /// (the store may have changed them since, with this very response).
    private func keeps(_ outcome: TaskOutcome, of task: DataTask, sent: Request) -> Bool {
        guard (outcome.metrics?.redirectCount ?? 0) == 0, !task.machine({ $0.hops.sentCredential }) else {
            return false
        }
        if configuration.httpShouldSetCookies, !sent.headers.contains("Cookie"), let response = outcome.response,
            ResponseCachePolicy.varyingFieldNames(of: response)?.contains("cookie") == true
        {
            return false
        }
        return true
    }

    /// Stores a cacheable response, runs the `taskDidComplete` hook and the completion handler
    /// (completion queue), then forgets the task and posts `taskDidComplete` on the event queue.
    private func finishCompletion(
        _ task: SessionTask, outcome: TaskOutcome, result: CompletionResult, serializer: any ResponseSerializer
    ) {
        // The completion's date: before the hooks and the handler, whose time is not the task's.
        let completedAt = Date()
        if let cache = configuration.responseCache {
            // An unsafe method's success invalidates the stored GETs it may have changed, whatever the task: its
            // URL's, and after a redirect the last hop's too (a 307 or 308 sent the request there; a `Location` in
            // its answer is relative to it). A 301 or 302 that made it a GET costs the target a miss at most.
            let request = task.originalRequest
            var invalidated = ResponseCachePolicy.invalidatedURLs(for: request, response: outcome.response)
            if let response = outcome.response, response.url != request.url {
                invalidated += ResponseCachePolicy.invalidatedURLs(
                    for: Request(url: response.url, method: request.method), response: response)
            }
            for url in invalidated {
                cache.removeCachedResponse(for: Request(url: url))
            }
            if task.usesResponseCache, let dataTask = task as? DataTask { store(outcome, of: dataTask, in: cache) }
        }
        taskDidComplete?(task.lifecycleSubject, outcome.error)
        task.runCompletionHandler(
            response: outcome.response, object: result.handlerObject, error: result.error,
            answeringResumeData: result.resumeDataAnswer)
        guard notificationCenter.hasObservers(for: .taskDidComplete) else {
            // Nobody observes completions: forget the task here and spare the hand-off to the event queue. Finishing
            // an invalidation still goes through the event queue, so `sessionDidInvalidate` stays after
            // every event already queued there.
            switch forget(task) {
            case .none: break
            case .close: eventPoster.async { [self] in finishInvalidating() }
            }
            return
        }
        eventPoster.async { [self] in
            let left = forget(task)
            // Redacted once, for both fields that carry it.
            let response = outcome.response?.redactingCredentials()
            eventPoster.postCompletion(
                of: task,
                TaskCompletion(
                    taskIdentifier: task.taskIdentifier, sessionIdentifier: identifier, date: completedAt,
                    request: task.requestSummary, responseSerializer: serializer, responseData: result.responseData,
                    assetPath: result.assetPath, serializedResponse: result.serializedResponse,
                    error: result.error, response: response, finalURL: response?.url,
                    metrics: outcome.metrics, responseSource: outcome.source, fileWasMoved: result.fileWasMoved))
            switch left {
            case .none: break
            case .close: finishInvalidating()
            }
        }
    }
}

/// A task the loop thread completed, waiting for the loop iteration's end to go to the completion queue.
struct CompletedTask: Sendable {
    var task: SessionTask
    var outcome: TaskOutcome
}
