import Foundation
import HeraldEngine

// Preparing and starting a task's transfers. The first transfer, a redirect's, an authentication
// round-trip's and a retry's all start the same way: prepared off the loop thread and outside the task's
// lock (the trace instrument, the cookie store and the session's hooks are read here), then handed to the
// state machine, which starts it, keeps it for `resume()`, or drops it when the task was cancelled meanwhile.
extension SessionTask {
    /// What the session's cache holds for this task's first resume, or `nil`.
    func cacheLookup() -> ResponseCachePolicy.Lookup? {
        guard let cache = session.configuration.responseCache, usesResponseCache,
            !machine({ $0.hasStarted })
        else { return nil }
        return ResponseCachePolicy.lookup(for: session.requestAsSent(originalRequest), in: cache)
    }

    /// Revalidates the stale entry this task was served (within its `stale-while-revalidate` window) with a
    /// data task of its own, whose answer the session stores as it stores any. A session that can no longer
    /// make tasks (invalidated) skips it: the entry stays stale and the next request revalidates it.
    private func revalidateInBackground() {
        let request = ResponseCachePolicy.backgroundRevalidation(of: originalRequest)
        let task = try? session.makeDataTask(with: request, bodyHandling: .raw, callbacks: TaskCallbacks())
        task?.resume()
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
            if case .staleWhileRevalidate = cached { revalidateInBackground() }
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

    /// Prepares a body for sending again: data and file bodies reopen from their start when the transfer
    /// opens them; a stream is replaced through ``SessionManager/taskNeedNewBodyStream``. Hook queue.
    func rewindBody(of request: inout TransferRequest) -> HeraldError? {
        guard case .stream(_, let renew, let queue) = request.body else { return nil }
        guard let fresh = renew() else {
            return HeraldError(
                .bodyStream,
                "The request body must be sent again (a 307/308 redirect or an authentication challenge), but a "
                    + "streamed body cannot be rewound and SessionManager.taskNeedNewBodyStream provided no new stream.",
                url: request.url)
        }
        request.body = .stream(fresh, renew: renew, readOn: queue)
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
        let firstStart = machine { $0.hops.metrics.first?.startDate }
        if request.resourceTimeout > 0, let firstStart {
            // The resource timeout covers the whole task, every hop included: the next transfer gets what is
            // left (a minimal value when nothing is, so curl fails it with timedOut at once).
            request.resourceTimeout = max(0.001, request.resourceTimeout - Date().timeIntervalSince(firstStart))
        }
        let sendsCredential = request.credential != nil
        // The request moves into the transfer: it is about 350 bytes, and copying it is not free.
        let transfer = Transfer(request: request, delegate: self)
        // The easy handle is made here, not on the loop thread that every transfer of the engine shares.
        transfer.prepare(from: session.multi?.easyHandles)
        transition({ $0.transferPrepared(transfer, sendsCredential: sendsCredential) }) { action in
            switch action {
            case .none, .wait: []
            case .start(let transfer): [.engine(.start(transfer))]
            }
        }
    }

    /// Completes the task with the hop's response (its 3xx or 401) and `error`. Hook queue.
    func finishHop(_ outcome: TaskOutcome, error: HeraldError?) {
        var outcome = outcome
        outcome.error = error
        completeTransfer(outcome)
    }
}
