import Dispatch
import Foundation

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

    init(
        handlerObject: (any Sendable)? = nil, serializedResponse: (any Sendable)? = nil, responseData: Data? = nil,
        assetPath: URL? = nil, error: HeraldError? = nil
    ) {
        self.handlerObject = handlerObject
        self.serializedResponse = serializedResponse
        self.responseData = responseData
        self.assetPath = assetPath
        self.error = error
    }

    /// The serializer's output, or the error the task completes with. A transport error wins; the
    /// serializer only sees transfers that produced a response.
    static func serialize(
        _ outcome: TransferOutcome, with serializer: any ResponseSerializer, url: URL
    ) -> ((any Sendable)?, HeraldError?) {
        if let error = outcome.error { return (nil, error) }
        guard let response = outcome.response else {
            return (nil, HeraldError(.badServerResponse, "The transfer ended without a response.", url: url))
        }
        do throws(HeraldError) {
            return (try serializer.serializeErased(response: response, data: outcome.body), nil)
        } catch {
            return (nil, error)
        }
    }
}

extension SessionManager {
    /// A completed task's outcome, delivered by its completion lane (see ``OutcomeLanes/complete(_:with:)``).
    /// On the session's own completion queue, serializes it (or moves a download), stores a cacheable
    /// response, runs the `taskDidComplete` hook and the completion handler, then posts `taskDidComplete` on
    /// the event queue and forgets the task (AF's order). With a completion queue the caller passed in, this
    /// runs on a global queue — the caller's queue (perhaps the main queue) is not the place for parsing or
    /// file moves — and the rest on the caller's queue, in ``completionGroup``.
    func completionArrived(_ task: SessionTask, outcome: TransferOutcome) {
        let serializer = responseSerializer
        let result = task.completionResult(for: outcome, serializer: serializer)
        if lanes.completion.waitsForNextBatch {
            finishCompletion(task, outcome: outcome, result: result, serializer: serializer)
        } else {
            completionQueue.async(group: completionGroup) { [self] in
                finishCompletion(task, outcome: outcome, result: result, serializer: serializer)
            }
        }
    }

    /// Stores a cacheable response (see ``ResponseCache``), as `dataTaskWillCacheResponse` allows.
    /// Completion queue, before the completion handler.
    private func store(_ outcome: TransferOutcome, of task: DataTask, in cache: any ResponseCache) {
        guard !outcome.isFromCache, outcome.error == nil, task.originalRequest.method == "GET" else { return }
        let proposal = ResponseCachePolicy.proposal(for: task.originalRequest, outcome: outcome)
        guard let proposal, let entry = dataTaskWillCacheResponse.map({ $0(task, proposal) }) ?? proposal else {
            // The network answered anew and its answer is not kept: neither is an older one.
            cache.removeCachedResponse(for: task.originalRequest)
            return
        }
        cache.storeCachedResponse(entry, for: task.originalRequest)
    }

    /// Stores a cacheable response, runs the `taskDidComplete` hook and the completion handler
    /// (completion queue), then forgets the task and posts `taskDidComplete` on the event queue.
    private func finishCompletion(
        _ task: SessionTask, outcome: TransferOutcome, result: CompletionResult, serializer: any ResponseSerializer
    ) {
        if let cache = configuration.responseCache, task.usesResponseCache, let dataTask = task as? DataTask {
            store(outcome, of: dataTask, in: cache)
        }
        taskDidComplete?(task.lifecycleSubject, outcome.error)
        task.runCompletionHandler(response: outcome.response, object: result.handlerObject, error: result.error)
        guard notificationCenter.hasObservers(for: .taskDidComplete) else {
            // Nobody observes completions: forget the task here and spare the event-queue hop. Finishing
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
            eventPoster.postCompletion(
                of: task,
                TaskCompletion(
                    taskIdentifier: task.taskIdentifier, sessionIdentifier: identifier, date: Date(),
                    request: task.requestSummary, responseSerializer: serializer, responseData: result.responseData,
                    assetPath: result.assetPath, serializedResponse: result.serializedResponse,
                    error: result.error, response: outcome.response, finalURL: outcome.response?.url,
                    metrics: outcome.metrics))
            switch left {
            case .none: break
            case .close: finishInvalidating()
            }
        }
    }
}
