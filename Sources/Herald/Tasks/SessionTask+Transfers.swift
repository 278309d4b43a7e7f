import Foundation
import HeraldEngine

// Preparing and starting a task's transfers. The first transfer, a redirect's, an authentication
// round-trip's and a retry's all start the same way: prepared off the loop thread and outside the task's
// lock (the trace instrument, the cookie store and the session's hooks are read here), then handed to the
// state machine, which starts it, keeps it for `resume()`, or drops it when the task was cancelled meanwhile.
extension SessionTask {
    /// What the session's cache holds for this task's first resume, or `nil`. For a request asking
    /// `only-if-cached`, never `nil` nor stale: a `504` stands in for what the cache can't serve (whatever the
    /// method: the cache serves `GET`s alone, and the request may not go to the network).
    func cacheLookup() -> ResponseCachePolicy.Lookup? {
        guard let cache = session.configuration.responseCache, usesResponseCache, !machine({ $0.hasStarted })
        else { return nil }
        let sent = session.requestAsSent(originalRequest)
        let lookup = ResponseCachePolicy.lookup(for: sent, in: cache).flatMap(usable)
        switch lookup {
        case .fresh, .staleWhileRevalidate: return lookup
        case .stale, nil:
            guard ResponseCachePolicy.asksOnlyIfCached(sent) else { return lookup }
            return .fresh(ResponseCachePolicy.gatewayTimeout(for: sent))
        }
    }

    /// `lookup`, unless its stored answer would lead to another hop — a redirect this session follows (stored
    /// by a session that doesn't, or whose redirection hook declined it), a challenge it may answer: that is
    /// asked of the network, as the next hop is built from the transfer that got the answer, and a stored one
    /// has none.
    private func usable(_ lookup: ResponseCachePolicy.Lookup) -> ResponseCachePolicy.Lookup? {
        nextHop(after: lookup.entry.response) == nil ? lookup : nil
    }

    /// Revalidates the stale entry this task was served (within its `stale-while-revalidate` window) with a
    /// data task of its own, whose answer the session stores as it stores any. It carries this task's own
    /// `interceptor`: the entry was stored under the request as that interceptor adapted it, and asked without
    /// it the server could answer for another request (another tenant, no credential) in the entry's place. A
    /// session that can no longer make tasks (invalidated) skips it: the entry stays stale and the next request
    /// revalidates it. One revalidation per entry at a time: hits while one runs start none (each would ask the
    /// server the same question, and a server slow to answer would get one per hit).
    private func revalidateInBackground(interceptor: (any RequestInterceptor)?) {
        let request = ResponseCachePolicy.backgroundRevalidation(of: originalRequest)
        let key = InMemoryResponseCache.key(for: request)
        let running = session.backgroundRevalidations
        guard running.withLock({ $0.insert(key).inserted }) else { return }
        let callbacks = TaskCallbacks(completion: { _, _, _ in _ = running.withLock { $0.remove(key) } })
        guard let task = try? session.makeDataTask(with: request, bodyHandling: .raw, callbacks: callbacks) else {
            _ = running.withLock { $0.remove(key) }
            return
        }
        task.interceptor = interceptor
        task.resume()
    }

    /// What a first resume read under the task's lock for starting: the task's own interceptor and a stale
    /// cache entry's validators.
    struct FirstStart {
        var interceptor: (any RequestInterceptor)?
        var validators: HTTPHeaders?
    }

    /// Serves a fresh cached response, or runs the adapter, or prepares and starts the first transfer.
    func startFirstTransfer(cached: ResponseCachePolicy.Lookup?, _ start: FirstStart) {
        switch cached {
        case .fresh(let entry), .staleWhileRevalidate(let entry):
            // Not for a request that may not go to the network (`only-if-cached`): its revalidation would ask the
            // cache alone again, and complete with a `504` that revalidates nothing.
            if case .staleWhileRevalidate = cached,
                !ResponseCachePolicy.asksOnlyIfCached(session.requestAsSent(originalRequest))
            {
                revalidateInBackground(interceptor: start.interceptor)
            }
            // Followed up on the loop thread, as every transfer's outcome is: one path, whatever stood in.
            let outcome = TaskOutcome(
                response: entry.response, body: entry.data, error: nil, metrics: nil, source: .cache)
            return session.engine.execute { [self] in proceed(after: outcome) }
        case .stale, nil:
            break
        }
        if let interceptor = Self.combined(start.interceptor, session.interceptor) {
            // The adapter runs first, off this thread; it starts the transfer.
            return startAttempt(with: interceptor)
        }
        startTransfer(attemptTransferRequest(for: originalRequest, validators: start.validators))
    }

    /// Whether a later attempt could do better than the failed one: not when the task stopped the transfer
    /// with an error of its own (``TaskHops/stoppedByTask``), and for a streamed body only when
    /// ``SessionManager/taskNeedNewBodyStream`` may give a new one. An attempt that could only fail again
    /// (with ``HeraldError/Code/bodyStream``, or the task's own error) is neither offered to the retrier nor
    /// waited for after a loss of network: the failure the task has stands. The body is the attempt's, which
    /// starts again from its first request, not the failed hop's (a `303`'s `GET` sends none).
    var canTryAgain: Bool {
        guard !machine({ $0.hops.stoppedByTask }) else { return false }
        return !sendsStreamedBody || session.taskNeedNewBodyStream != nil
    }

    /// Prepares a body for sending again: data and file bodies reopen from their start when the transfer
    /// opens them; a stream is replaced through ``SessionManager/taskNeedNewBodyStream``. Hook queue.
    func rewindBody(of request: inout TransferRequest) -> HeraldError? {
        guard case .stream(_, let renew, let queue, let length) = request.body else { return nil }
        guard let fresh = renew() else {
            return HeraldError(
                .bodyStream,
                "The request body must be sent again (a redirect that keeps it, an authentication challenge, a "
                    + "retry), but a streamed body cannot be rewound and SessionManager.taskNeedNewBodyStream "
                    + "provided no new stream.",
                url: request.url)
        }
        request.body = .stream(fresh, renew: renew, readOn: queue, length: length)
        return nil
    }

    /// Starts the task's next transfer (its first one too), unless it was cancelled meanwhile; a suspended
    /// task keeps it until ``resume()``. Never the loop thread, never with the task's lock held: the trace
    /// instrument and the cookie store run here.
    func startTransfer(_ request: consuming TransferRequest) {
        var request = request
        // Every transfer carries the trace context, whatever a redirection hook or an adapter did to the headers.
        trace?.inject(into: &request.headers)
        request.cookieHeader = session.cookieHeader(for: request.url)
        // One lock for what the resource timeout needs: when the first transfer started, and the timer that
        // stood in between transfers, which this transfer's own timeout replaces.
        let (firstStart, deadline) = core.withLock { core in
            defer { core.resourceDeadline = nil }
            return (core.machine.hops.firstTransferStart, core.resourceDeadline)
        }
        deadline?.cancel()
        // From the session's timeout, not the request's: a hop's request is a copy of the transfer's before it, whose
        // timeout was already cut to what was left then.
        if let left = Self.timeLeft(of: session.configuration.timeoutIntervalForResource, since: firstStart) {
            // The resource timeout covers the whole task, every hop included: the next transfer gets what is
            // left, and none is started once nothing is.
            guard left > 0 else { return resourceTimeoutPassed(url: request.url) }
            request.resourceTimeout = left
        }
        let credential = request.credential.map {
            SentCredential(user: $0.user, password: $0.password, url: request.url)
        }
        // The request moves into the transfer: it is about 350 bytes, and copying it is not free.
        let transfer = Transfer(request: request, delegate: self)
        // The easy handle is made here, not on the loop thread that every transfer of the engine shares.
        transfer.prepare(from: session.multi?.easyHandles)
        let prepared = transition({ $0.transferPrepared(transfer, credential: credential) }) { action in
            switch action {
            case .none, .wait: []
            case .start(let transfer): [.engine(.start(transfer))]
            }
        }
        // Suspended before it could start: the resource timeout keeps running while the transfer waits for
        // `resume()`, as between transfers. The timer outlives a resume before the deadline and stops the
        // transfer then: its own timeout, counted from when libcurl gets it, would let it run the wait too long.
        if case .wait = prepared { armResourceDeadline() }
    }

    /// Completes the task with the hop's response (its 3xx or 401) and `error`. Hook queue.
    func finishHop(_ outcome: TaskOutcome, error: HeraldError?) {
        var outcome = outcome
        outcome.error = error
        completeTransfer(outcome)
    }
}

// The resource timeout between transfers. Each transfer's own timeout is what is left of the task's; while the
// task is between transfers — a hook deciding a redirect or a challenge, a retry's delay — a timer stands in.
extension SessionTask {
    /// What is left of a resource timeout `timeout` counted from `firstStart`, the task's first transfer's
    /// start; `nil` when there is no timeout or no transfer has started.
    static func timeLeft(of timeout: TimeInterval, since firstStart: ContinuousClock.Instant?) -> TimeInterval? {
        guard timeout > 0, timeout.isFinite, let firstStart else { return nil }
        let elapsed = (ContinuousClock.now - firstStart).components
        return timeout - (Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18)
    }

    /// Arms the timer that completes the task with `timedOut` if its resource timeout passes before the next
    /// transfer starts — the task is between transfers — or that stops the transfer whose result the engine
    /// holds for the task's answer, out of libcurl's reach (its own timeout ends only what it runs).
    func armResourceDeadline() {
        guard
            let left = Self.timeLeft(
                of: session.configuration.timeoutIntervalForResource,
                since: machine { $0.hops.firstTransferStart })
        else { return }
        let url = originalRequest.url
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .nanoseconds(Int(min(max(0, left), 1e9) * 1e9)))
        timer.setEventHandler { [weak self, timer] in
            timer.cancel()
            self?.resourceTimeoutPassed(url: url)
        }
        // Not armed for a task already complete: nothing would cancel it.
        let armed = core.withLock { core -> Bool in
            guard core.machine.taskState != .completed else { return false }
            core.resourceDeadline?.cancel()
            core.resourceDeadline = timer
            return true
        }
        // A source is released resumed (a suspended one traps); cancelled first, its handler never runs.
        if !armed { timer.cancel() }
        timer.resume()
    }

    /// Completes the task with `timedOut`, or stops its transfer with it: the engine then finishes the transfer
    /// with that error (one libcurl runs would end by its own timeout about now; one whose result is held for
    /// the task's answer would not).
    func resourceTimeoutPassed(url: URL) {
        let error = HeraldError(
            .timedOut, "The request did not finish within its resource timeout (timeoutIntervalForResource).",
            url: url)
        transition({ $0.resourceTimedOut(error) }) { action in
            switch action {
            case .none: []
            case .stop(let transfer): [.engine(.remove(transfer, error: TransferError(error)))]
            case .complete(let completion, let retryTimer):
                (retryTimer.map { [.cancelTimer($0)] } ?? []) + [finishing(completion)]
            }
        }
    }
}
