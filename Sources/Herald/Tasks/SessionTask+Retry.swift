import Dispatch
import Foundation
import HeraldNotifications

// Interceptors and retries. With an interceptor (the task's, the session's, or both), every attempt of a
// task starts with the adapter, run on a Swift concurrency task; a failed attempt goes to the retrier,
// and a retry is one more hop of the same task, like a redirect: the task stays `running` (or
// `suspended`) in between, so `cancel()` completes it at once with `cancelled` and `suspend()` holds the
// next attempt until `resume()`. Each retry is announced with `taskWillRetry`, queued on the session's
// event queue under the task's lock, so it always lands between the task's `taskDidResume` and its
// `taskDidComplete`.
extension SessionTask {
    /// An interceptor for this task alone, Alamofire's per-request interceptor.
    ///
    /// Set it before ``resume()``; it is read when the task starts and after each failed attempt. When
    /// the session has one too (``SessionManager/interceptor``), both apply: adapters run this task's
    /// first, then the session's; retriers are asked in the same order until one retries. Default `nil`.
    public var interceptor: (any RequestInterceptor)? {
        get { core.withLock { $0.interceptor } }
        set { core.withLock { $0.interceptor = newValue } }
    }

    /// The interceptor that applies: `own` (the task's), the session's, or both. Called with the task's
    /// lock held (it takes the session's, as reading its hooks does).
    func effectiveInterceptor(_ own: (any RequestInterceptor)?) -> (any RequestInterceptor)? {
        switch (own, session.interceptor) {
        case (nil, nil): nil
        case (let own?, nil): own
        case (nil, let shared?): shared
        case (let own?, let shared?): Interceptor(adapters: [own, shared], retriers: [own, shared])
        }
    }

    /// The transfer request for one attempt of `request`, with a stale cache entry's `validators` and the
    /// data-task hook flags. Called with the task's lock held.
    func attemptTransferRequest(for request: Request, validators: HTTPHeaders?) -> TransferRequest {
        var transfer = makeTransferRequest(for: request)
        transfer.cookieHeader = session.cookieHeader(for: transfer.url)
        transfer.proxy = session.configuration.proxy
        if let validators {
            transfer.revalidatesCachedResponse = true
            for field in validators { transfer.headers.add(name: field.name, value: field.value) }
        }
        if receivesDataTaskHooks {
            session.readHooks { hooks in
                transfer.asksForResponseDisposition = hooks.dataTaskDidReceiveResponse != nil
                transfer.forwardsBodyChunks = hooks.dataTaskDidReceiveData != nil
            }
        }
        return transfer
    }

    /// Runs the adapter, then starts the attempt's transfer. The task is between hops.
    func startAttempt(with interceptor: any RequestInterceptor) {
        Task.detached { [self] in await runAttempt(with: interceptor) }
    }

    private func runAttempt(with interceptor: any RequestInterceptor) async {
        let request: Request
        do {
            let adapted = try await interceptor.adapt(originalRequest, for: lifecycleSubject)
            try adapted.validate(allowedProtocols: session.configuration.allowedProtocols)
            request = adapted
        } catch {
            return failAttempt(Self.adaptationError(error, url: originalRequest.url))
        }
        let prepared = core.withLock { core -> (TransferRequest, attempt: Int)? in
            core.hops.retryTimer = nil
            guard core.machine.state == .running || core.machine.state == .suspended else { return nil }
            core.hops.attemptRequest = request
            return (attemptTransferRequest(for: request, validators: core.hops.cacheValidators), core.hops.attempt)
        }
        guard let prepared else { return }
        var transfer = prepared.0
        let attempt = prepared.attempt
        // The first attempt sends the body as it is; a retry sends it again (a stream asks for a new one).
        if attempt > 1, let failure = rewindBody(of: &transfer) { return failAttempt(failure) }
        startHop(transfer)
    }

    /// Completes the task with `error`, keeping the last response that arrived. Between hops.
    private func failAttempt(_ error: HeraldError) {
        let response = core.withLock { $0.response }
        finishHop(TransferOutcome(response: response, body: Data(), error: error, metrics: nil), error: error)
    }

    static func adaptationError(_ error: any Error, url: URL) -> HeraldError {
        if let error = error as? HeraldError { return error }
        return HeraldError(.invalidRequest, "The request adapter failed: \(error)", underlying: error, url: url)
    }

    /// Whether `outcome`, a failed attempt, goes to the retrier; if so the task does not complete now.
    /// Loop thread.
    func beginRetry(after outcome: TransferOutcome) -> Bool {
        guard !outcome.isFromCache, let failure = Self.retryableFailure(of: outcome) else { return false }
        let asked = core.withLock { core -> (any RequestInterceptor, Request, attempt: Int)? in
            guard core.machine.state == .running || core.machine.state == .suspended, core.transfer != nil,
                core.downloadFace == nil, let interceptor = effectiveInterceptor(core.interceptor)
            else { return nil }
            core.transfer = nil
            if let response = outcome.response { core.response = response }
            core.hops.isBetweenHops = true
            return (interceptor, core.hops.attemptRequest ?? originalRequest, core.hops.attempt)
        }
        guard let (interceptor, request, attempt) = asked else { return false }
        let context = RetryContext(
            task: lifecycleSubject, request: request, error: failure, response: outcome.response, attempt: attempt)
        Task.detached { [self] in
            switch await interceptor.retry(context) {
            case .doNotRetry:
                finishHop(outcome, error: outcome.error)
            case .retry:
                scheduleRetry(after: outcome, failure: failure, delay: 0, interceptor: interceptor)
            case .retryWithDelay(let delay):
                scheduleRetry(after: outcome, failure: failure, delay: delay, interceptor: interceptor)
            }
        }
        return true
    }

    /// The longest delay Herald waits for (a year); a longer one is waited for this long.
    static let maximumRetryDelay: TimeInterval = 365 * 24 * 3600

    /// Announces the retry and starts the next attempt after `delay`, unless the task was cancelled
    /// meanwhile. Between hops.
    private func scheduleRetry(
        after outcome: TransferOutcome, failure: HeraldError, delay: TimeInterval, interceptor: any RequestInterceptor
    ) {
        let delay = delay.isNaN ? 0 : min(Self.maximumRetryDelay, max(0, delay))
        core.withLock { core in
            guard core.machine.state == .running || core.machine.state == .suspended else { return }
            if let metrics = outcome.metrics { core.hops.metrics.append(metrics) }
            core.hops.attempt += 1
            // Each attempt follows its own redirects and answers its own challenges.
            core.hops.redirectCount = 0
            core.hops.visited = []
            core.hops.authenticationFailures = 0
            session.eventPoster.postRetry(
                of: self, attempt: core.hops.attempt, error: failure, response: outcome.response, delay: delay)
            let timer = DispatchWorkItem { [self] in startAttempt(with: interceptor) }
            core.hops.retryTimer = timer
            Self.hopQueue.asyncAfter(deadline: .now() + delay, execute: timer)
        }
    }

    /// What a retrier is shown for `outcome`: its transport error (not a cancellation), or
    /// `unacceptableStatusCode` for a status of 400 or more; `nil` for a success.
    static func retryableFailure(of outcome: TransferOutcome) -> HeraldError? {
        if let error = outcome.error { return error.code == .cancelled ? nil : error }
        guard let response = outcome.response, response.statusCode >= 400 else { return nil }
        return HeraldError(
            .unacceptableStatusCode, "The server answered \(response.statusCode).", url: response.url,
            statusCode: response.statusCode)
    }
}

extension SessionEventPoster {
    /// Queues `taskWillRetry` on the event queue. Called with the task's lock held, after its resume
    /// and before anything can complete it, so the notification lands between the two.
    func postRetry(
        of task: SessionTask, attempt: Int, error: HeraldError, response: HTTPResponse?, delay: TimeInterval
    ) {
        guard center.hasObservers(for: .taskWillRetry) else { return }
        let subject = task.lifecycleSubject
        let retry = TaskRetry(
            taskIdentifier: subject.taskIdentifier, sessionIdentifier: sessionIdentifier,
            request: task.requestSummary, date: Date(),
            attempt: attempt, error: error, response: response, delay: delay)
        let center = center
        eventQueue.async { center.post(.taskWillRetry, object: subject, userInfo: retry) }
    }
}
