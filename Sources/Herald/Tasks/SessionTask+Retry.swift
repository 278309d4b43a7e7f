import Dispatch
import Foundation
import HeraldNotifications
import HeraldEngine

// Interceptors and retries. With an interceptor (the task's, the session's, or both), every attempt of a
// task starts with the adapter, run on a Swift concurrency task that prefers the hook queue's executor; a
// failed attempt goes to the retrier, run the same way, and a retry's delay is an `asyncAfter` on the hook
// queue. A retry is one more hop of the same task, like a redirect: the task stays `running` (or
// `suspended`) in between, so `cancel()` completes it at once with `cancelled` and `suspend()` holds the
// next attempt until `resume()`. Each retry is announced with `taskWillRetry`, an effect of the machine's
// transition carried out in order with the task's others, so it always lands between the task's
// `taskDidResume` and its `taskDidComplete`.
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

    /// The interceptor that applies: `own` (the task's), `shared` (the session's), or both.
    static func combined(
        _ own: (any RequestInterceptor)?, _ shared: (any RequestInterceptor)?
    ) -> (any RequestInterceptor)? {
        switch (own, shared) {
        case (nil, nil): nil
        case (let own?, nil): own
        case (nil, let shared?): shared
        case (let own?, let shared?): Interceptor(adapters: [own, shared], retriers: [own, shared])
        }
    }

    /// The transfer request for one attempt of `request`, with a stale cache entry's `validators` and the
    /// data-task hook flags. Never with the task's lock held: it reads the session's hooks.
    func attemptTransferRequest(for request: Request, validators: HTTPHeaders?) -> TransferRequest {
        // The `Cookie` field is added by `startTransfer(_:)`, as for every hop.
        var transfer = makeTransferRequest(for: request)
        transfer.proxy = session.configuration.proxy?.settings
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
        updateAnswersChallenges(of: &transfer)
        return transfer
    }

    /// Sets whether a `401` to `transfer` may be answered by the task — a challenge hook, or a credential the
    /// store holds for the transfer's origin — and so is kept from the data hooks and from a download's file.
    /// For every hop's own origin: the first request's, and each redirect's.
    func updateAnswersChallenges(of transfer: inout TransferRequest) {
        var writesFile = false
        if case .file = transfer.sink { writesFile = true }
        guard transfer.asksForResponseDisposition || transfer.forwardsBodyChunks || writesFile,
            let host = transfer.url.host, let port = transfer.url.effectivePort
        else {
            transfer.answersChallenges = false
            return
        }
        transfer.answersChallenges = mayAnswerChallenge(forHost: host, port: port)
    }

    /// Whether a Basic or Digest challenge from `host:port` may be answered: a challenge hook decides, or the
    /// credential store holds a credential for that origin. Without either, a `401` is the attempt's result,
    /// which the retrier is shown as any other.
    func mayAnswerChallenge(forHost host: String, port: Int) -> Bool {
        var hasChallengeHook = false
        session.readHooks { hooks in
            hasChallengeHook =
                hooks.taskDidReceiveAuthenticationChallenge != nil
                || hooks.sessionDidReceiveAuthenticationChallenge != nil
        }
        return hasChallengeHook || session.credentialStore.hasCredential(forHost: host, port: port)
    }

    /// Runs the adapter, then starts the attempt's transfer. The task is between hops.
    /// `afterWait`: the attempt starts again after a wait for connectivity, which keeps its number; the failed
    /// transfer may have read some of a streamed body, so the body is sent again from its start.
    func startAttempt(with interceptor: any RequestInterceptor, afterWait: Bool = false) {
        runOnHookQueue { [self] in await runAttempt(with: interceptor, afterWait: afterWait) }
    }

    private func runAttempt(with interceptor: any RequestInterceptor, afterWait: Bool) async {
        let request: Request
        do {
            let adapted = try await interceptor.adapt(originalRequest, for: lifecycleSubject)
            try adapted.validate(allowedProtocols: session.configuration.allowedProtocols)
            // An upload's body is not its request's, which `validate` checks: libcurl would send a HEAD without it.
            if sendsUploadBody, adapted.method == "HEAD" { throw Self.headUpload(url: adapted.url) }
            request = adapted
        } catch {
            return failAttempt(Self.adaptationError(error, url: originalRequest.url))
        }
        guard case .start(let attempt, let validators) = transition({ $0.attemptStarts(with: request) }) else {
            return
        }
        var transfer = attemptTransferRequest(for: request, validators: validators)
        // The first attempt sends the body as it is; a retry, or the attempt again after a wait for
        // connectivity, sends it again (a stream asks for a new one).
        if attempt > 1 || afterWait, let failure = rewindBody(of: &transfer) { return failAttempt(failure) }
        startTransfer(transfer)
    }

    /// Completes the task with `error`, keeping the last response that arrived. Between hops.
    private func failAttempt(_ error: HeraldError) {
        let response = machine { $0.report.response }
        finishHop(TaskOutcome(response: response, body: Data(), error: error, metrics: nil), error: error)
    }

    /// The refusal of an upload by `HEAD`, whose body libcurl would not send.
    static func headUpload(url: URL) -> HeraldError {
        HeraldError(.invalidRequest, "A HEAD request has no body to upload; send one with another method.", url: url)
    }

    static func adaptationError(_ error: any Error, url: URL) -> HeraldError {
        if let error = error as? HeraldError { return error }
        return HeraldError(.invalidRequest, "The request adapter failed: \(error)", underlying: error, url: url)
    }

    /// Whether `outcome`, a failed attempt, goes to the retrier; if so the task does not complete now.
    /// Not once the resource timeout has passed: no attempt could start, so the failure stands as it is
    /// rather than be announced as a retry that never comes. On the loop thread, after the transfer ended;
    /// the retrier runs on ``hookQueue``.
    ///
    /// `afterHop`: the outcome is a hop's that was to lead to another transfer and ends the attempt after all (a
    /// `401` whose challenge no credential answered), on the hook queue; the task is between transfers, and the
    /// hop's metrics are recorded already. The retrier is asked as it is about a `401` the session never tried to
    /// answer.
    func beginRetry(after outcome: TaskOutcome, afterHop: Bool = false) -> Bool {
        guard !outcome.isFromCache, let failure = Self.retryableFailure(of: outcome), canTryAgain else {
            return false
        }
        let timeout = session.configuration.timeoutIntervalForResource
        let firstStart = machine { $0.hops.firstTransferStart }
        if let left = Self.timeLeft(of: timeout, since: firstStart), left <= 0 {
            return false
        }
        let resourceDeadline = Self.timeLeft(of: timeout, since: firstStart).map { Date().addingTimeInterval($0) }
        // The session's interceptor is read before taking the task's lock: it has a lock of its own.
        let shared = session.interceptor
        guard let interceptor = Self.combined(interceptor, shared) else { return false }
        // What the next attempt would continue from is settled before the task goes between transfers: a cancel or
        // the resource timeout from then on (while the retrier decides, too) completes the task without this
        // attempt's outcome, and a download must still keep its file and give resume data then, as it does during a
        // retry's delay. Settled, it describes the file this outcome left, which is what the task completes with
        // when it no longer runs the transfer.
        let continuesFromByte = prepareRetry(after: outcome)
        guard
            case .ask(let sent, let attempt) = transition({ machine in
                if afterHop, let response = outcome.response { return machine.retryAskedAfterHop(response: response) }
                return machine.retryAsked(response: outcome.response, metrics: outcome.metrics)
            })
        else { return false }
        let request = sent ?? originalRequest
        let context = RetryContext(
            task: lifecycleSubject, request: request, error: failure, response: outcome.response, attempt: attempt,
            resourceDeadline: resourceDeadline)
        // The transfer's own timeout ended with it: a retrier slower than what is left is cut short.
        armResourceDeadline()
        runOnHookQueue { [self] in
            switch await interceptor.retry(context) {
            case .doNotRetry:
                finishHop(outcome, error: finalError(of: outcome, failure: failure, attempt: attempt))
            case .retry:
                scheduleRetry(
                    after: outcome, failure: failure, delay: 0, continuesFromByte: continuesFromByte,
                    recordsMetrics: !afterHop, interceptor: interceptor)
            case .retryWithDelay(let delay):
                scheduleRetry(
                    after: outcome, failure: failure, delay: delay, continuesFromByte: continuesFromByte,
                    recordsMetrics: !afterHop, interceptor: interceptor)
            }
        }
        return true
    }

    /// The longest delay Herald waits for (a year); a longer one is waited for this long.
    static let maximumRetryDelay: TimeInterval = 365 * 24 * 3600

    /// Announces the retry and starts the next attempt after `delay`, unless the task was cancelled
    /// meanwhile; `recordsMetrics`: the failed transfer's metrics become a hop's (not when its hop recorded them).
    /// Between hops.
    private func scheduleRetry(
        after outcome: TaskOutcome, failure: HeraldError, delay: TimeInterval, continuesFromByte: Int64?,
        recordsMetrics: Bool, interceptor: any RequestInterceptor
    ) {
        let delay = delay.isNaN ? 0 : min(Self.maximumRetryDelay, max(0, delay))
        // Weak: a cancelled work item keeps its block until the deadline, and with it a cancelled task and its
        // session for as long as the delay (up to a year). A task waiting to retry is held by the session's
        // task list until it completes.
        let timer = DispatchWorkItem { [weak self] in self?.startAttempt(with: interceptor) }
        let metrics = recordsMetrics ? outcome.metrics : nil
        let scheduled = transition({ $0.retryScheduled(timer, after: metrics) }) { action in
            switch action {
            case .none:
                []
            case .schedule(let attempt):
                [
                    .announceRetry(
                        self,
                        RetryAnnouncement(
                            attempt: attempt, error: failure, response: outcome.response, delay: delay,
                            continuesFromByte: continuesFromByte)),
                    .schedule(timer, delay: delay),
                ]
            }
        }
        if case .schedule = scheduled { armResourceDeadline() }
    }

    /// What a retrier is shown for `outcome`: its transport error (not a cancellation), or
    /// `unacceptableStatusCode` for a status of 400 or more; `nil` for a success.
    static func retryableFailure(of outcome: TaskOutcome) -> HeraldError? {
        if let error = outcome.error { return error.code == .cancelled ? nil : error }
        guard let response = outcome.response, response.statusCode >= 400 else { return nil }
        return HeraldError(
            .unacceptableStatusCode, "The server answered \(response.statusCode).", url: response.url,
            response: response, responseBody: outcome.body, metrics: outcome.metrics)
    }
}

extension SessionEventPoster {
    /// Queues `taskWillRetry` on the event queue: an effect of the task's transition, carried out in order
    /// with its others, after its resume and before anything can complete it.
    func postRetry(of task: SessionTask, _ retry: RetryAnnouncement) {
        guard center.hasObservers(for: .taskWillRetry) else { return }
        let subject = task.lifecycleSubject
        let payload = TaskRetry(
            taskIdentifier: subject.taskIdentifier, sessionIdentifier: sessionIdentifier,
            request: task.requestSummary, date: Date(),
            attempt: retry.attempt, error: retry.error, response: retry.response?.redactingCredentials(),
            delay: retry.delay,
            continuesFromByte: retry.continuesFromByte)
        let center = center
        async { center.post(.taskWillRetry, object: subject, userInfo: payload) }
    }
}
