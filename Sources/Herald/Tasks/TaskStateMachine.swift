import Dispatch
import Foundation
import HeraldEngine

/// A task's whole lifecycle as a value, in one private enum whose cases carry their own data: the state its
/// user sees, where its transfer work stands, the transfer in the engine with whether it sends a credential
/// and the download task it became, and a finished transfer's outcome held while suspended. Beside the enum,
/// in private stored properties that only the transitions change: what the task remembers across transfers
/// (``TaskHops``: redirects, authentication round-trips, retries), what it reports of them (``TaskReport``:
/// response, metrics, error, a download's resume data after a failure), the caller's callbacks
/// (``TaskCallbacks``) and those waiting for a held outcome.
///
/// Every event is a `mutating` method that returns an action, an enum the owner switches on. ``SessionTask``
/// runs the event under the task's lock through its one entry point, `transition(_:_:)`, turns the action
/// into effects, and carries them out after releasing the lock (`SessionTask+Effects.swift`), so no
/// notification is posted, no engine command sent and no hook run while the lock is held.
///
/// `suspended` (new tasks start here) → `running` ⇄ `suspended`; `running`/`suspended` → `canceling` →
/// `completed`; `running`/`suspended` → `completed`. A transfer that finishes without an error while the task
/// is suspended never completes it: its outcome is held until ``resume(revalidating:)``, which completes the
/// task with it, or ``cancel()``, which completes it as cancelled.
///
/// The machine knows its transfer and its download task only as objects (`Handle`, `Download`): its tests
/// build it alone, with no session, engine or libcurl. An event that cannot happen in a state — a second
/// transfer prepared while one runs, say — is a bug of the caller: it stops the process with
/// `preconditionFailure`, in release builds too.
struct TaskStateMachine<Handle: AnyObject, Download: AnyObject> {
    /// A transfer the task handed to the engine (or is about to), with what the task knows of it.
    private struct InFlight {
        var transfer: Handle
        /// The credential it sends, if any: a 401 answering it refuses that credential.
        var credential: SentCredential?
        /// The download task the data task became while this transfer ran
        /// (``ResponseDisposition/becomeDownload``): the task that completes. Such a transfer leads to no
        /// hop and no wait for a network, only to a retry (as a download: see ``becameDownload``).
        var download: Download?
    }

    /// Where a running task's transfer work stands.
    private enum Running {
        /// Between two transfers: the first is being prepared, an adapter runs, the next hop or a retry is
        /// being decided, or a retry waits for its delay (or a network) on `retryTimer`.
        case betweenTransfers(retryTimer: DispatchWorkItem?)
        /// A transfer is in the engine, or on its way there.
        case transferring(InFlight)
    }

    /// Where a suspended task's transfer work stands.
    private enum Suspended {
        /// Never resumed.
        case notStarted
        /// Between two transfers (see ``Running/betweenTransfers(retryTimer:)``); the next one waits for
        /// ``resume(revalidating:)``.
        case betweenTransfers(retryTimer: DispatchWorkItem?)
        /// The transfer is in the engine, paused.
        case transferring(InFlight)
        /// The next transfer was prepared while suspended: ``resume(revalidating:)`` starts it.
        case readyToStart(InFlight)
        /// A transfer finished without an error while suspended: ``resume(revalidating:)`` completes the task
        /// with its outcome, as `download` when the data task had become one.
        case holding(TaskOutcome, download: Download?)
    }

    /// The state the user sees, each with its own data.
    private enum State {
        case suspended(Suspended)
        case running(Running)
        /// ``cancel()`` stopped a transfer: the engine finishes it with `cancelled`, which completes the task
        /// (as `download` when the data task had become one).
        case canceling(stopping: Handle, download: Download?)
        case completed
    }

    private var state: State = .suspended(.notStarted)
    /// What the task remembers across the transfers it runs; changed only by the transitions.
    private(set) var hops = TaskHops()
    /// What the task reports: its last response, its final metrics and error; changed only by the transitions.
    private(set) var report = TaskReport()
    /// The error a ``cancel(error:)`` that stopped a transfer completes the task with, whatever the stopped
    /// transfer's own outcome says (it may have ended just before the stop, or timed out).
    private var cancellation: HeraldError?
    /// The caller's completion and progress handlers, until ``completionReported(error:)`` hands them out.
    private var callbacks: TaskCallbacks
    /// Those waiting for a finished transfer's outcome to be held (see ``whenHoldingOutcome(_:)``).
    private var holdWaiters: [@Sendable () -> Void] = []
    /// The metrics of the attempt whose failure the retrier is deciding on, until a retry records them as a hop.
    private var askedAttemptMetrics: TransferMetrics?
    /// The download task the data task became (``ResponseDisposition/becomeDownload``), for good: its retries
    /// are that download's attempts, and it is the task that completes, whichever transfer ends it.
    private var becameDownload: Download?

    /// A new task's machine, suspended, with the completion and progress handlers its factory was given.
    init(callbacks: TaskCallbacks = TaskCallbacks()) {
        self.callbacks = callbacks
    }

    // MARK: - reads

    /// The state the task's user sees.
    var taskState: TaskState {
        switch state {
        case .suspended: .suspended
        case .running: .running
        case .canceling: .canceling
        case .completed: .completed
        }
    }

    /// Whether ``resume(revalidating:)`` has ever started the task.
    var hasStarted: Bool {
        if case .suspended(.notStarted) = state { return false }
        return true
    }

    /// The transfer in the engine now, if any: running, paused, or being stopped by a cancel.
    var currentTransfer: Handle? {
        switch state {
        case .running(.transferring(let inFlight)), .suspended(.transferring(let inFlight)): inFlight.transfer
        case .canceling(let stopping, _): stopping
        default: nil
        }
    }

    /// The download task the data task became, until the task completes: the task object that runs it from then
    /// on.
    var downloadTask: Download? {
        if case .completed = state { return nil }
        return becameDownload
    }

    /// Whether a transfer finished while the task was suspended and its outcome waits for a resume or a cancel.
    var isHoldingOutcome: Bool {
        if case .suspended(.holding) = state { return true }
        return false
    }

    /// The metrics of every transfer the task ran, in order, once it has completed: one per hop, then the
    /// final one. Empty before completion.
    var hopMetrics: [TransferMetrics] {
        guard case .completed = state else { return [] }
        guard report.metricsEndHops, let last = report.metrics else { return hops.metrics }
        return hops.metrics + [last]
    }

    /// The progress handler of one direction, while the task has not reported its completion.
    func progressHandler(upload: Bool) -> SessionTask.ProgressHandler? {
        upload ? callbacks.uploadProgress : callbacks.downloadProgress
    }

    /// How the task completes: with `outcome` as the task reports it, its error to be `cancelled` when
    /// `wasCancelled`, as `download` when the data task became one (it is the task that completes).
    struct Completion {
        var outcome: TaskOutcome
        var wasCancelled: Bool
        var download: Download?
    }

    // MARK: - the user's calls

    /// A stale cache entry a first resume found: every attempt sends `validators` with its request, and a
    /// `304` answer completes the task from `stale`.
    struct Revalidation {
        var stale: CachedResponse
        var validators: HTTPHeaders
    }

    enum ResumeAction {
        /// Not suspended: nothing changes.
        case none
        /// The first resume: announce it, then prepare the first transfer (sending `validators`, a stale
        /// cache entry's), or serve the cache, or run the adapter, and hand it over with
        /// ``transferPrepared(_:credential:)``.
        case start(validators: HTTPHeaders?)
        /// Announce, and continue the paused transfer where it stopped.
        case unpause(Handle)
        /// Announce, and hand the engine the transfer prepared while suspended.
        case startTransfer(Handle)
        /// Announce, and complete the task with the outcome held while suspended.
        case complete(Completion)
        /// Announce only: the task is between two transfers, and the next starts when it is ready.
        case announce
    }

    /// The task resumes; a first resume that found a stale cache entry says so with `revalidation`.
    mutating func resume(revalidating revalidation: Revalidation? = nil) -> ResumeAction {
        guard case .suspended(let work) = state else { return .none }
        switch work {
        case .notStarted:
            state = .running(.betweenTransfers(retryTimer: nil))
            if let revalidation {
                hops.cacheValidators = revalidation.validators
                report.revalidating = revalidation.stale
            }
            return .start(validators: hops.cacheValidators)
        case .transferring(let inFlight):
            state = .running(.transferring(inFlight))
            return .unpause(inFlight.transfer)
        case .readyToStart(let inFlight):
            state = .running(.transferring(inFlight))
            return .startTransfer(inFlight.transfer)
        case .holding(let outcome, let download):
            // Completed now that it runs again: the resume is announced first, then the completion.
            state = .completed
            return .complete(Completion(outcome: reported(outcome), wasCancelled: false, download: download))
        case .betweenTransfers(let timer):
            state = .running(.betweenTransfers(retryTimer: timer))
            return .announce
        }
    }

    enum SuspendAction {
        /// Not running: nothing changes.
        case none
        /// Announce only: no transfer runs now (the next one waits for a resume).
        case announce
        /// Announce, and pause the transfer.
        case pause(Handle)
    }

    mutating func suspend() -> SuspendAction {
        guard case .running(let work) = state else { return .none }
        switch work {
        case .transferring(let inFlight):
            state = .suspended(.transferring(inFlight))
            return .pause(inFlight.transfer)
        case .betweenTransfers(let timer):
            state = .suspended(.betweenTransfers(retryTimer: timer))
            return .announce
        }
    }

    enum CancelAction {
        /// Already cancelling or completed: nothing changes.
        case none
        /// Stop the transfer; the engine finishes it with `cancelled`, which completes the task.
        case stop(Handle)
        /// Nothing is in the engine (never started, between transfers, a transfer prepared while suspended, an
        /// outcome held): the task completes now, as cancelled, after `retryTimer` (a retry's or a wait's
        /// pending timer) is cancelled.
        case complete(Completion, retryTimer: DispatchWorkItem?)
    }

    /// `error` is what a task completed here at once reports (``TaskReport/error`` says it from now on); a
    /// transfer that is stopped reports the engine's. An `error` of another code than `cancelled` is the
    /// session's own refusal of what the task received, not a cancellation: the completion says it as it is.
    mutating func cancel(error: HeraldError? = nil) -> CancelAction {
        let cancelled = TaskOutcome(response: nil, body: Data(), error: error, metrics: nil)
        let wasCancelled = (error?.code ?? .cancelled) == .cancelled
        switch state {
        case .canceling, .completed:
            return .none
        case .running(.transferring(let inFlight)), .suspended(.transferring(let inFlight)):
            state = .canceling(stopping: inFlight.transfer, download: becameDownload)
            cancellation = error
            return .stop(inFlight.transfer)
        case .suspended(.notStarted):
            state = .completed
            return .complete(
                Completion(outcome: reported(cancelled), wasCancelled: wasCancelled, download: nil), retryTimer: nil)
        case .suspended(.holding(var outcome, let download)):
            state = .completed
            if let error, outcome.error?.code != .cancelled { outcome.error = error }
            return .complete(
                Completion(outcome: reported(outcome), wasCancelled: wasCancelled, download: download), retryTimer: nil)
        case .suspended(.readyToStart):
            // The prepared transfer never reached the engine.
            state = .completed
            return .complete(
                Completion(
                    outcome: reported(withLastResponse: cancelled), wasCancelled: wasCancelled,
                    download: becameDownload),
                retryTimer: nil)
        case .running(.betweenTransfers(let timer)), .suspended(.betweenTransfers(let timer)):
            state = .completed
            return .complete(
                Completion(
                    outcome: reported(withLastResponse: cancelled), wasCancelled: wasCancelled,
                    download: becameDownload),
                retryTimer: timer)
        }
    }

    /// The task's resource timeout passed. With nothing of it in the engine (a hook deciding the next hop, a
    /// retry's delay) it completes now with `error`, after `retryTimer` is cancelled. With a transfer in the
    /// engine, the transfer is stopped (`stop`), and the engine finishes it with `error`: one libcurl runs ends
    /// by its own timeout about then, but one whose result the engine holds for the task's answer would not.
    /// With an outcome held while suspended, the transfer ended in time.
    mutating func resourceTimedOut(_ error: HeraldError) -> CancelAction {
        switch state {
        case .running(.betweenTransfers(let timer)), .suspended(.betweenTransfers(let timer)):
            state = .completed
            var outcome = TaskOutcome(response: nil, body: Data(), error: error, metrics: nil)
            outcome = reported(withLastResponse: outcome)
            return .complete(
                Completion(outcome: outcome, wasCancelled: false, download: becameDownload), retryTimer: timer)
        case .suspended(.readyToStart):
            state = .completed
            let outcome = TaskOutcome(response: nil, body: Data(), error: error, metrics: nil)
            return .complete(
                Completion(outcome: reported(withLastResponse: outcome), wasCancelled: false, download: becameDownload),
                retryTimer: nil)
        case .running(.transferring(let inFlight)), .suspended(.transferring(let inFlight)):
            // The engine ends the transfer with the error; its outcome goes the usual way.
            return .stop(inFlight.transfer)
        case .suspended(.notStarted), .suspended(.holding), .canceling, .completed:
            return .none
        }
    }

    // MARK: - the response and the caller's callbacks

    /// A response head arrived: a transfer's, or a hop's or a retry's that ends one. Kept until the next.
    mutating func responseArrived(_ response: HTTPResponse) {
        report.response = response
    }

    enum ProgressObserverAction {
        /// The observer joined the handlers.
        case added
        /// The task has completed: its counts are final, and its callbacks may already have run. Nothing was
        /// added; the observer is to be finished now.
        case finishNow
    }

    /// An observer of one direction's progress joins the handlers: `onProgress` after that direction's
    /// handler, `onCompletion` before the completion handler, until the task completes.
    mutating func progressObserverAdded(
        upload: Bool, onProgress: @escaping SessionTask.ProgressHandler, onCompletion: @escaping @Sendable () -> Void
    ) -> ProgressObserverAction {
        guard taskState != .completed else { return .finishNow }
        if upload {
            callbacks.uploadProgress = TaskCallbacks.chain(callbacks.uploadProgress, onProgress)
        } else {
            callbacks.downloadProgress = TaskCallbacks.chain(callbacks.downloadProgress, onProgress)
        }
        let previous = callbacks.completion
        callbacks.completion = { response, object, error in
            onCompletion()
            previous?(response, object, error)
        }
        return .added
    }

    enum ResumeDataRequestAction {
        /// The handler is kept, for the completion to answer: cancel the task.
        case cancel
        /// The task has completed, or a handler is already kept: answer `nil` now.
        case answerNil
    }

    /// A download task's caller asks for resume data as it cancels.
    mutating func resumeDataRequested(_ handler: @escaping @Sendable (Data?) -> Void) -> ResumeDataRequestAction {
        guard taskState != .completed, callbacks.resumeData == nil else { return .answerNil }
        callbacks.resumeData = handler
        return .cancel
    }

    enum ResumeDataAnswerAction {
        /// No one asked for resume data.
        case none
        /// Answer `handler` with the resume data the outcome allows.
        case answer(@Sendable (Data?) -> Void)
    }

    /// The completed task's resume-data handler, handed out once, for its completion to answer.
    mutating func resumeDataAnswered() -> ResumeDataAnswerAction {
        guard case .completed = state else {
            preconditionFailure("resume data answered while the task is \(state)")
        }
        guard let handler = callbacks.resumeData else { return .none }
        callbacks.resumeData = nil
        return .answer(handler)
    }

    /// The completed download broke part-way and its partial file is kept: `resumeData` continues it.
    mutating func resumeDataMadeAfterFailure(_ resumeData: Data) {
        guard case .completed = state else {
            preconditionFailure("resume data made after a failure while the task is \(state)")
        }
        report.resumeDataAfterFailure = resumeData
    }

    enum CompletionReportAction {
        /// Give the progress handlers their final update, then run the completion handler: `callbacks` are
        /// the last the task holds.
        case report(TaskCallbacks)
    }

    /// The completed task's final error (the serializer may have added one): what ``TaskReport/error``
    /// says from now on. Hands out the caller's callbacks, exactly once; none are kept.
    mutating func completionReported(error: HeraldError?) -> CompletionReportAction {
        guard case .completed = state else {
            preconditionFailure("a completion reported while the task is \(state)")
        }
        report.error = error
        defer { callbacks = TaskCallbacks() }
        return .report(callbacks)
    }

    enum HoldWaitAction {
        /// An outcome is held already: run the waiter now.
        case runNow
        /// The waiter is kept, and handed out by the ``complete(with:)`` that holds an outcome.
        case wait
    }

    /// `waiter` waits for a finished transfer's outcome to be held while the task is suspended.
    mutating func whenHoldingOutcome(_ waiter: @escaping @Sendable () -> Void) -> HoldWaitAction {
        if isHoldingOutcome { return .runNow }
        holdWaiters.append(waiter)
        return .wait
    }

    // MARK: - between transfers

    /// The transfer in the engine ends, and leads to another transfer. Returns it, or `nil` when the task no
    /// longer runs it (cancelled meanwhile) or it became a download (unless `allowingDownload`: a retry
    /// continues the download): then the task completes instead.
    private mutating func endTransfer(_ event: String, allowingDownload: Bool = false) -> InFlight? {
        switch state {
        case .running(.transferring(let inFlight)) where allowingDownload || inFlight.download == nil:
            state = .running(.betweenTransfers(retryTimer: nil))
            return inFlight
        case .suspended(.transferring(let inFlight)) where allowingDownload || inFlight.download == nil:
            state = .suspended(.betweenTransfers(retryTimer: nil))
            return inFlight
        case .running(.transferring), .suspended(.transferring), .canceling, .completed:
            return nil
        case .running, .suspended:
            preconditionFailure("\(event) while the task had no transfer in the engine: \(state)")
        }
    }

    enum HopAction {
        /// The transfer `from` ended: decide the next hop from its request.
        case decide(from: Handle)
        /// The task no longer runs that transfer (cancelled meanwhile), or it became a download: complete the
        /// task with the outcome.
        case complete
    }

    /// The transfer in the engine ended with `response`, a redirect to follow or (`isChallenge`) a challenge
    /// to answer, after sending the request `key`: records the hop (the request, its metrics, a refused
    /// credential) and the response.
    mutating func hopEnds(
        sent key: String, response: HTTPResponse, metrics: TransferMetrics?, isChallenge: Bool
    ) -> HopAction {
        guard let ended = endTransfer("a hop ended") else { return .complete }
        hops.visited.insert(key)
        hops.recordHop(metrics)
        hops.lastTransferRecorded = metrics != nil
        if isChallenge, let refused = ended.credential {
            hops.authenticationFailures += 1
            hops.refusedCredentials.insert(refused)
        }
        report.response = response
        return .decide(from: ended.transfer)
    }

    enum RedirectAction {
        /// Follow it: it is counted.
        case follow
        /// This task already sent that request: a loop, not counted.
        case loop
    }

    /// Whether `response`, the answer to a stale cache entry's revalidation, is a `304` that confirms another
    /// representation than the entry's: then it can't complete the task from the entry.
    func refutesRevalidation(_ response: HTTPResponse) -> Bool {
        guard response.statusCode == 304, hops.redirectCount == 0, let stale = report.revalidating else {
            return false
        }
        return !ResponseCachePolicy.confirms(response, stored: stale.response)
    }

    /// The task stops revalidating its stale cache entry: its next transfers, retries included, ask without the
    /// entry's validators, and their answer is the task's.
    mutating func revalidationAbandoned() {
        report.revalidating = nil
        hops.cacheValidators = nil
    }

    /// The next hop follows a redirect to the request `key`.
    mutating func redirectFollowed(to key: String) -> RedirectAction {
        guard !hops.visited.contains(key) else { return .loop }
        hops.redirectCount += 1
        return .follow
    }

    enum RetryQuestionAction {
        /// Ask the retrier about attempt number `attempt`, which sent `request` (`nil`: the original request).
        case ask(request: Request?, attempt: Int)
        /// The task no longer runs that transfer: complete the task with the outcome.
        case complete
    }

    /// The task stops `transfer` with an error of its own (see ``TaskHops/stoppedByTask``); nothing when it is
    /// no longer the task's transfer (it ended meanwhile, and a retry may run another).
    mutating func stoppingTransferWithOwnError(_ transfer: Handle) {
        guard currentTransfer === transfer else { return }
        hops.stoppedByTask = true
    }

    /// The transfer in the engine failed (`response`, if any, is the failure's) and the retrier is to be asked
    /// about it; the task is between transfers meanwhile. A transfer that became a download is asked about
    /// too: its retry is the download's next attempt.
    mutating func retryAsked(response: HTTPResponse?, metrics: TransferMetrics?) -> RetryQuestionAction {
        guard endTransfer("a retry was asked", allowingDownload: true) != nil else { return .complete }
        if let response { report.response = response }
        // Until a retry records them as a hop: a cancel or the resource timeout while the retrier decides
        // completes the task with them.
        askedAttemptMetrics = metrics
        return .ask(request: hops.attemptRequest, attempt: hops.attempt)
    }

    /// The hop that just ended (``hopEnds(sent:response:metrics:isChallenge:)``, which recorded its metrics) ends
    /// the attempt after all — a challenge no credential answered — and the retrier is to be asked about its
    /// `response`. The task is between transfers already.
    mutating func retryAskedAfterHop(response: HTTPResponse) -> RetryQuestionAction {
        switch state {
        case .running(.betweenTransfers(retryTimer: nil)), .suspended(.betweenTransfers(retryTimer: nil)):
            report.response = response
            return .ask(request: hops.attemptRequest, attempt: hops.attempt)
        case .canceling, .completed:
            return .complete
        case .running, .suspended:
            preconditionFailure("a retry was asked after a hop while the task was not deciding one: \(state)")
        }
    }

    enum RetryAction {
        /// Cancelled meanwhile: nothing is scheduled.
        case none
        /// Announce the retry of attempt number `attempt`, then start `timer`.
        case schedule(attempt: Int)
    }

    /// A retry waits `timer`'s delay after a failed attempt (whose metrics are kept). Each attempt follows
    /// its own redirects and answers its own challenges.
    mutating func retryScheduled(_ timer: DispatchWorkItem, after metrics: TransferMetrics?) -> RetryAction {
        guard setRetryTimer(timer, for: "a retry scheduled") else { return .none }
        hops.recordHop(metrics)
        askedAttemptMetrics = nil
        hops.attempt += 1
        hops.redirectCount = 0
        hops.visited = []
        hops.authenticationFailures = 0
        hops.refusedCredentials = []
        return .schedule(attempt: hops.attempt)
    }

    enum ConnectivityWaitAction {
        /// The task no longer runs that transfer, or it became a download: complete the task with the outcome.
        case complete
        /// Announce the wait, then wait with the timer; `since` is when the task's first transfer started, `nil`
        /// without metrics.
        case announceAndWait(since: ContinuousClock.Instant?)
    }

    /// The failed transfer in the engine found no network: the task waits for one with `timer`, which starts
    /// the attempt again when a network comes back (the failed transfer's metrics are kept). The attempt keeps
    /// its number: it was never answered.
    mutating func connectivityWaitBegins(
        _ timer: DispatchWorkItem, after metrics: TransferMetrics?
    ) -> ConnectivityWaitAction {
        guard endTransfer("a wait for connectivity began") != nil else { return .complete }
        _ = setRetryTimer(timer, for: "a wait for connectivity")
        hops.recordHop(metrics)
        hops.redirectCount = 0
        hops.visited = []
        hops.authenticationFailures = 0
        hops.refusedCredentials = []
        hops.connectivityWaits += 1
        return .announceAndWait(since: hops.firstTransferStart)
    }

    enum AttemptAction {
        /// Cancelled meanwhile: the attempt does not start.
        case none
        /// Prepare attempt number `attempt`'s transfer, sending `validators` (a stale cache entry's).
        case start(attempt: Int, validators: HTTPHeaders?)
    }

    /// A new attempt starts (its delay is over, its adapter returned `request`).
    mutating func attemptStarts(with request: Request) -> AttemptAction {
        guard setRetryTimer(nil, for: "an attempt started") else { return .none }
        hops.attemptRequest = request
        return .start(attempt: hops.attempt, validators: hops.cacheValidators)
    }

    /// Between transfers, running or suspended: keeps `timer` as the pending timer (`nil`: none) and returns
    /// `true`. Returns `false` once completed (a cancel completes a task between transfers at once); any other
    /// state is not between transfers, and `event` (what happened) is an impossible event there.
    private mutating func setRetryTimer(_ timer: DispatchWorkItem?, for event: String) -> Bool {
        switch state {
        case .running(.betweenTransfers):
            state = .running(.betweenTransfers(retryTimer: timer))
        case .suspended(.betweenTransfers):
            state = .suspended(.betweenTransfers(retryTimer: timer))
        case .canceling, .completed:
            return false
        case .running, .suspended:
            preconditionFailure("\(event) while the task is not between transfers: \(state)")
        }
        return true
    }

    enum PreparedAction {
        /// Cancelled meanwhile: drop the transfer.
        case none
        /// Running: hand the transfer to the engine.
        case start(Handle)
        /// Suspended: keep the transfer until the task resumes.
        case wait
    }

    /// The next transfer (the first one too) is ready; `credential` is the one it sends, if any (a 401
    /// answering it refuses it).
    mutating func transferPrepared(_ transfer: Handle, credential: SentCredential? = nil) -> PreparedAction {
        let inFlight = InFlight(transfer: transfer, credential: credential, download: nil)
        if credential != nil { hops.sentCredential = true }
        hops.lastTransferRecorded = false
        switch state {
        case .running(.betweenTransfers):
            state = .running(.transferring(inFlight))
            if hops.firstTransferStart == nil { hops.firstTransferStart = .now }
            return .start(transfer)
        case .suspended(.betweenTransfers):
            state = .suspended(.readyToStart(inFlight))
            if hops.firstTransferStart == nil { hops.firstTransferStart = .now }
            return .wait
        case .canceling, .completed:
            return .none
        case .running, .suspended:
            preconditionFailure("a transfer prepared while the task is not between transfers: \(state)")
        }
    }

    enum BecomeDownloadAction {
        /// The transfer goes on as `download`'s, which completes the task.
        case become
        /// The task no longer runs that transfer (cancelled while the hook ran): it stays a data task.
        case none
    }

    /// The data task becomes `download` while `transfer` runs.
    mutating func becomeDownload(_ download: Download, runningTransfer transfer: Handle) -> BecomeDownloadAction {
        switch state {
        case .running(.transferring(var inFlight)) where inFlight.transfer === transfer && inFlight.download == nil:
            inFlight.download = download
            state = .running(.transferring(inFlight))
            becameDownload = download
            return .become
        case .suspended(.transferring(var inFlight)) where inFlight.transfer === transfer && inFlight.download == nil:
            inFlight.download = download
            state = .suspended(.transferring(inFlight))
            becameDownload = download
            return .become
        default:
            return .none
        }
    }

    // MARK: - completion

    enum CompleteAction {
        /// Already completed: nothing happens (exactly once).
        case none
        /// The task is suspended: the outcome is held for a resume; wake `waiters`, who waited for that.
        case hold(waiters: [@Sendable () -> Void])
        /// The task completes.
        case finish(Completion)
    }

    /// The task's last transfer (or the cache, or a hop that ends the task) produced `outcome`. When it
    /// completes the task, the outcome it completes with is the task's report: a `304` answering a
    /// revalidation completes with the cached response, refreshed; the metrics count the redirects Herald
    /// followed (curl follows none itself), or are the last hop's when the final answer came without any.
    mutating func complete(with outcome: TaskOutcome) -> CompleteAction {
        switch state {
        case .completed:
            return .none
        case .suspended(.notStarted):
            preconditionFailure("a task that never started completed with an outcome")
        case .suspended where outcome.error == nil:
            // `suspend()` won the race against the transfer's end: a suspended task never completes
            // successfully, so the result waits for a resume.
            state = .suspended(.holding(outcome, download: becameDownload))
            defer { holdWaiters = [] }
            return .hold(waiters: holdWaiters)
        case .canceling(_, let download):
            state = .completed
            var outcome = outcome
            if let cancellation, outcome.error?.code != .cancelled { outcome.error = cancellation }
            let wasCancelled = (cancellation?.code ?? .cancelled) == .cancelled
            return .finish(Completion(outcome: reported(outcome), wasCancelled: wasCancelled, download: download))
        case .running, .suspended:
            let download = downloadTask
            state = .completed
            return .finish(Completion(outcome: reported(outcome), wasCancelled: false, download: download))
        }
    }

    /// `outcome`, a cancellation's between transfers, with the last response that arrived; a revalidation
    /// ends unanswered.
    private mutating func reported(withLastResponse outcome: TaskOutcome) -> TaskOutcome {
        var outcome = outcome
        outcome.response = report.response
        if outcome.metrics == nil { outcome.metrics = askedAttemptMetrics }
        report.revalidating = nil
        return reported(outcome)
    }

    /// Records the completing `outcome` in the report and returns it as the task reports it.
    private mutating func reported(_ outcome: TaskOutcome) -> TaskOutcome {
        var outcome = outcome
        if let stale = report.revalidating, outcome.error == nil, let notModified = outcome.response,
            notModified.statusCode == 304, hops.redirectCount == 0
        {
            // The server confirmed the cached response: complete with it, refreshed by the 304's fields. (Behind
            // a redirect a 304 answers another URL, which was not asked with the entry's validators.)
            outcome.response = ResponseCachePolicy.refreshed(stale.response, with: notModified)
            outcome.body = stale.data
            outcome.source = .revalidated
        }
        report.revalidating = nil
        if var metrics = outcome.metrics, !hops.lastTransferRecorded {
            // Written only when it changes: a write copies the outcome's fields, which its caller still holds.
            if metrics.redirectCount != hops.redirectCount {
                metrics.redirectCount = hops.redirectCount
                outcome.metrics = metrics
            }
            // It ends `hopMetrics`, kept apart from the earlier hops': most tasks have none, and so no list
            // to allocate.
            report.metricsEndHops = true
        } else if outcome.response != nil || hops.lastTransferRecorded, let last = hops.metrics.last {
            // The last hop's: the outcome's own transfer when its hop recorded it (counted once), else the last
            // transfer that had metrics, for an outcome that came without any.
            outcome.metrics = last
        }
        report.metrics = outcome.metrics
        if let response = outcome.response { report.response = response }
        // What the task says from the moment it is completed, not only once its completion handler ran (which
        // may replace it with the serializer's).
        report.error = outcome.error
        return outcome
    }
}
