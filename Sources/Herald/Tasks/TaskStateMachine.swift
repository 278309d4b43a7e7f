import Dispatch
import Foundation

/// A task's whole lifecycle as a value: the state its user sees with the data of that state (where its
/// transfer work stands), what it remembers across transfers (``TaskHops``: redirects, authentication
/// round-trips, retries), what it reports of them (``TaskReport``: response, metrics, error), the caller's
/// callbacks that report it (``TaskCallbacks``) and the download task a data task became.
///
/// Every change is a `mutating` transition that returns what the owner must do. ``SessionTask`` calls it
/// under the task's lock and carries the answer out after releasing the lock, through its effect
/// pipeline (`SessionTask+Effects.swift`), so no notification is posted, no engine command sent and no
/// hook run while the lock is held. Nothing outside changes the machine's state or its hops: both are
/// read-only from outside.
///
/// `suspended` (new tasks start here) → `running` ⇄ `suspended`; `running`/`suspended` → `canceling` →
/// `completed`; `running` → `completed`. A transfer that finishes while the task is suspended never
/// completes it: its outcome is held until ``resume()`` (or completes as cancelled on ``cancel()``).
///
/// The machine knows its transfer and its download task only as objects (`Handle`, `Download`): its tests
/// build it alone, with no session, engine or libcurl. An event that cannot happen in a state — a second
/// transfer prepared while one runs, say — is a bug of the caller: it fails an assertion in debug builds
/// and changes nothing in release builds.
struct TaskStateMachine<Handle: AnyObject, Download: AnyObject> {
    /// Where a running task's transfer work stands.
    private enum Running {
        /// Between two transfers: the first is being prepared, an adapter runs, the next hop or a retry is
        /// being decided, or a retry waits for its delay on `retryTimer`.
        case betweenTransfers(retryTimer: DispatchWorkItem?)
        /// A transfer is in the engine, or on its way there.
        case transferring(Handle)
    }

    /// Where a suspended task's transfer work stands.
    private enum Suspended {
        /// Never resumed.
        case notStarted
        /// Between two transfers (see ``Running/betweenTransfers(retryTimer:)``); the next one waits for
        /// ``resume()``.
        case betweenTransfers(retryTimer: DispatchWorkItem?)
        /// The transfer is in the engine, paused.
        case transferring(Handle)
        /// The next transfer was prepared while suspended: ``resume()`` starts it.
        case readyToStart(Handle)
        /// The transfer finished without an error while suspended: ``resume()`` completes the task with it.
        case holding(TransferOutcome)
    }

    /// The state the user sees, each with its own data.
    private enum Phase {
        case suspended(Suspended)
        case running(Running)
        /// ``cancel()`` happened: the engine finishes the transfer it is `stopping` with `cancelled`, or,
        /// with none, the task completes at once.
        case canceling(stopping: Handle?)
        case completed
    }

    private var phase: Phase = .suspended(.notStarted)
    /// What the task remembers across the transfers it runs; changed only by the transitions.
    private(set) var hops = TaskHops()
    /// What the task reports: its last response, its final metrics and error.
    private(set) var report = TaskReport()
    /// The download task this data task became (``ResponseDisposition/becomeDownload``); it is the task that
    /// completes. Set while the transfer runs, cleared at completion.
    private(set) var downloadTask: Download?
    /// The caller's completion and progress handlers, until ``completionReported(error:)`` hands them out.
    private var callbacks: TaskCallbacks

    /// A new task's machine, suspended, with the completion and progress handlers its factory was given.
    init(callbacks: TaskCallbacks = TaskCallbacks()) {
        self.callbacks = callbacks
    }

    /// The state the task's user sees.
    var state: TaskState {
        switch phase {
        case .suspended: .suspended
        case .running: .running
        case .canceling: .canceling
        case .completed: .completed
        }
    }

    /// Whether ``resume()`` has ever started the task.
    var hasStarted: Bool {
        if case .suspended(.notStarted) = phase { return false }
        return true
    }

    /// Whether the task can still change: neither cancelled nor completed.
    var isLive: Bool { state == .running || state == .suspended }

    /// The transfer in the engine now, if any: running, paused, or being stopped by a cancel.
    var currentTransfer: Handle? {
        switch phase {
        case .running(.transferring(let transfer)), .suspended(.transferring(let transfer)): transfer
        case .canceling(let stopping): stopping
        default: nil
        }
    }

    /// Whether a transfer finished while the task was suspended and its outcome waits for ``resume()``.
    var isHoldingOutcome: Bool {
        if case .suspended(.holding) = phase { return true }
        return false
    }

    // MARK: - the user's calls

    enum ResumeAction {
        /// Not suspended: nothing changes.
        case none
        /// The first resume: announce it, then prepare the first transfer (or serve the cache, or run the
        /// adapter) and hand it over with ``transferPrepared(_:sendsCredential:)``.
        case start
        /// Announce, and continue the paused transfer where it stopped.
        case unpause(Handle)
        /// Announce, and hand the engine the transfer prepared while suspended.
        case startTransfer(Handle)
        /// Announce, and complete the task with the outcome held while suspended.
        case complete(TransferOutcome)
        /// Announce only: the task is between two transfers, and the next starts when it is ready.
        case announce
    }

    mutating func resume() -> ResumeAction {
        guard case .suspended(let work) = phase else { return .none }
        switch work {
        case .notStarted:
            phase = .running(.betweenTransfers(retryTimer: nil))
            return .start
        case .transferring(let transfer):
            phase = .running(.transferring(transfer))
            return .unpause(transfer)
        case .readyToStart(let transfer):
            phase = .running(.transferring(transfer))
            return .startTransfer(transfer)
        case .holding(let outcome):
            phase = .running(.betweenTransfers(retryTimer: nil))
            return .complete(outcome)
        case .betweenTransfers(let timer):
            phase = .running(.betweenTransfers(retryTimer: timer))
            return .announce
        }
    }

    /// The first resume found `stale`, a stale cache entry: every attempt sends `validators` with its
    /// request, and a `304` answer completes the task from the entry.
    mutating func revalidates(_ stale: CachedResponse, with validators: HTTPHeaders) {
        hops.cacheValidators = validators
        report.revalidating = stale
    }

    /// A response head arrived: a transfer's, or a hop's or a retry's that ends one. Kept until the next.
    mutating func responseArrived(_ response: HTTPResponse) {
        report.response = response
    }

    /// The metrics of every transfer the task ran, in order, once it has completed: one per hop, then the
    /// final one. Empty before completion.
    var hopMetrics: [TransferMetrics] {
        guard case .completed = phase else { return [] }
        guard report.metricsEndHops, let last = report.metrics else { return hops.metrics }
        return hops.metrics + [last]
    }

    /// The completed task's final error (the serializer may have added one): what ``TaskReport/error``
    /// says from now on. Hands out the caller's callbacks, exactly once: the completion handler to run and
    /// the progress handlers to give their final update; none are kept.
    mutating func completionReported(error: HeraldError?) -> TaskCallbacks {
        guard case .completed = phase else {
            assertionFailure("a completion reported while the task is \(phase)")
            return TaskCallbacks()
        }
        report.error = error
        defer { callbacks = TaskCallbacks() }
        return callbacks
    }

    // MARK: - the caller's callbacks

    /// The progress handler of one direction, while the task has not reported its completion.
    func progressHandler(upload: Bool) -> SessionTask.ProgressHandler? {
        upload ? callbacks.uploadProgress : callbacks.downloadProgress
    }

    /// A download task's caller asked for resume data as it cancels: returns whether `handler` is taken, as
    /// it is once and only before the task completes (the completion answers it).
    mutating func resumeDataRequested(_ handler: @escaping @Sendable (Data?) -> Void) -> Bool {
        guard state != .completed, callbacks.resumeData == nil else { return false }
        callbacks.resumeData = handler
        return true
    }

    /// The completed task's resume-data handler, handed out once, for its completion to answer.
    mutating func resumeDataHandlerTaken() -> (@Sendable (Data?) -> Void)? {
        guard case .completed = phase else {
            assertionFailure("resume data answered while the task is \(phase)")
            return nil
        }
        defer { callbacks.resumeData = nil }
        return callbacks.resumeData
    }

    /// An observer of one direction's progress joins the handlers: `onProgress` after that direction's
    /// handler, `onCompletion` before the completion handler. Returns `false`, adding nothing, once the
    /// task has completed: its counts are final, and its callbacks may already have run.
    mutating func progressObserverAdded(
        upload: Bool, onProgress: @escaping SessionTask.ProgressHandler, onCompletion: @escaping @Sendable () -> Void
    ) -> Bool {
        guard state != .completed else { return false }
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
        return true
    }

    enum SuspendAction {
        /// Not running: nothing changes.
        case none
        /// Announce only: no transfer runs now (the next one waits for ``resume()``).
        case announce
        /// Announce, and pause the transfer.
        case pause(Handle)
    }

    mutating func suspend() -> SuspendAction {
        guard case .running(let work) = phase else { return .none }
        switch work {
        case .transferring(let transfer):
            phase = .suspended(.transferring(transfer))
            return .pause(transfer)
        case .betweenTransfers(let timer):
            phase = .suspended(.betweenTransfers(retryTimer: timer))
            return .announce
        }
    }

    enum CancelAction {
        /// Already cancelled or completed: nothing changes.
        case none
        /// Never started: complete with `cancelled` without touching the engine.
        case completeUnstarted
        /// Stop the transfer; the engine finishes it with `cancelled`, which completes the task.
        case stop(Handle)
        /// Complete (as cancelled) with the outcome held while suspended.
        case complete(TransferOutcome)
        /// Between two transfers, nothing is in the engine: complete at once with `cancelled`, after
        /// cancelling a retry's pending timer.
        case completeBetweenTransfers(retryTimer: DispatchWorkItem?)
    }

    mutating func cancel() -> CancelAction {
        switch phase {
        case .canceling, .completed:
            return .none
        case .suspended(.notStarted):
            phase = .canceling(stopping: nil)
            return .completeUnstarted
        case .running(.transferring(let transfer)), .suspended(.transferring(let transfer)):
            phase = .canceling(stopping: transfer)
            return .stop(transfer)
        case .suspended(.holding(let outcome)):
            phase = .canceling(stopping: nil)
            return .complete(outcome)
        case .suspended(.readyToStart):
            phase = .canceling(stopping: nil)
            return .completeBetweenTransfers(retryTimer: nil)
        case .running(.betweenTransfers(let timer)), .suspended(.betweenTransfers(let timer)):
            phase = .canceling(stopping: nil)
            return .completeBetweenTransfers(retryTimer: timer)
        }
    }

    // MARK: - between transfers

    /// The running transfer ended with a response that leads to another transfer (a failure to show the
    /// retrier). Returns the transfer that ended, or `nil` when the task is no longer running it (cancelled
    /// meanwhile): then the task completes instead.
    mutating func transferEndsBetweenTransfers() -> Handle? {
        switch phase {
        case .running(.transferring(let transfer)):
            phase = .running(.betweenTransfers(retryTimer: nil))
            return transfer
        case .suspended(.transferring(let transfer)):
            phase = .suspended(.betweenTransfers(retryTimer: nil))
            return transfer
        case .canceling, .completed:
            return nil
        case .running, .suspended:
            assertionFailure("a transfer ended while the task had none in the engine: \(phase)")
            return nil
        }
    }

    /// The running transfer ended with a redirect to follow or a challenge to answer: records the hop (the
    /// request sent, its metrics, a refused credential) and returns the transfer that ended, or `nil` when
    /// the task no longer runs it.
    mutating func hopEnds(sent key: String, metrics: TransferMetrics?, isChallenge: Bool) -> Handle? {
        guard let transfer = transferEndsBetweenTransfers() else { return nil }
        hops.visited.insert(key)
        hops.recordHop(metrics)
        if isChallenge, hops.sentCredential { hops.authenticationFailures += 1 }
        return transfer
    }

    /// The next hop follows a redirect to the request `key`: counts it, or returns `false` when this task
    /// already sent that request (a loop).
    mutating func redirectFollowed(to key: String) -> Bool {
        guard !hops.visited.contains(key) else { return false }
        hops.redirectCount += 1
        return true
    }

    /// A retry waits `timer`'s delay after a failed attempt (whose metrics are kept): returns the number of
    /// the attempt to come, or `nil` when the task was cancelled meanwhile. Each attempt follows its own
    /// redirects and answers its own challenges.
    mutating func retryScheduled(_ timer: DispatchWorkItem, after metrics: TransferMetrics?) -> Int? {
        guard setRetryTimer(timer, for: "a retry scheduled") else { return nil }
        hops.recordHop(metrics)
        hops.attempt += 1
        hops.redirectCount = 0
        hops.visited = []
        hops.authenticationFailures = 0
        return hops.attempt
    }

    /// The failed transfer found no network: the task waits for one with `timer`, which starts the attempt
    /// again when a network comes back (the failed transfer's metrics are kept). The attempt keeps its number:
    /// it was never answered. Returns whether this is the task's first wait (the one announced), or `nil` when
    /// the task was cancelled meanwhile.
    mutating func connectivityWaitBegins(_ timer: DispatchWorkItem, after metrics: TransferMetrics?) -> Bool? {
        guard setRetryTimer(timer, for: "a wait for connectivity") else { return nil }
        hops.recordHop(metrics)
        hops.redirectCount = 0
        hops.visited = []
        hops.authenticationFailures = 0
        hops.connectivityWaits += 1
        return hops.connectivityWaits == 1
    }

    /// A new attempt starts (its delay is over, its adapter returned `request`). Returns the attempt's
    /// number and the cache validators it sends, or `nil` when the task was cancelled meanwhile.
    mutating func attemptStarts(with request: Request) -> (attempt: Int, validators: HTTPHeaders?)? {
        guard setRetryTimer(nil, for: "an attempt started") else { return nil }
        hops.attemptRequest = request
        return (hops.attempt, hops.cacheValidators)
    }

    /// Between transfers, running or suspended: keeps `timer` as the retry's pending timer (`nil`: none)
    /// and returns `true`. Returns `false` once cancelled or completed; any other state is not between
    /// transfers, and `event` (what happened) is an impossible event there.
    private mutating func setRetryTimer(_ timer: DispatchWorkItem?, for event: String) -> Bool {
        switch phase {
        case .running(.betweenTransfers):
            phase = .running(.betweenTransfers(retryTimer: timer))
        case .suspended(.betweenTransfers):
            phase = .suspended(.betweenTransfers(retryTimer: timer))
        case .canceling, .completed:
            return false
        case .running, .suspended:
            assertionFailure("\(event) while the task is not between transfers: \(phase)")
            return false
        }
        return true
    }

    enum PreparedAction {
        /// Cancelled meanwhile: drop the transfer.
        case none
        /// Running: hand the transfer to the engine.
        case start(Handle)
        /// Suspended: keep the transfer until ``resume()``.
        case wait
    }

    /// The next transfer (the first one too) is ready; `sendsCredential` says whether it sends one (so a
    /// 401 answering it counts as a refusal).
    mutating func transferPrepared(_ transfer: Handle, sendsCredential: Bool = false) -> PreparedAction {
        switch phase {
        case .running(.betweenTransfers):
            phase = .running(.transferring(transfer))
            hops.sentCredential = sendsCredential
            return .start(transfer)
        case .suspended(.betweenTransfers):
            phase = .suspended(.readyToStart(transfer))
            hops.sentCredential = sendsCredential
            return .wait
        case .canceling, .completed:
            return .none
        case .running, .suspended:
            assertionFailure("a transfer prepared while the task is not between transfers: \(phase)")
            return .none
        }
    }

    /// The data task becomes `download` while `transfer` runs. Returns `false` when the task no longer runs
    /// it (cancelled while the hook ran).
    mutating func becomeDownload(_ download: Download, runningTransfer transfer: Handle) -> Bool {
        guard isLive, let running = currentTransfer, running === transfer else { return false }
        downloadTask = download
        return true
    }

    // MARK: - completion

    enum CompleteAction {
        /// Already completed: nothing happens (exactly once).
        case none
        /// The task is suspended: the outcome is held for ``resume()``.
        case hold
        /// The task completes with `outcome`, as the task reports it (see ``complete(with:)``);
        /// `wasCancelled` says its error must be `cancelled`, and `downloadTask` is the download task a data
        /// task became, which completes it.
        case finish(TransferOutcome, wasCancelled: Bool, downloadTask: Download?)
    }

    /// The task's last transfer (or the cache, or a cancellation) produced `outcome`. When it completes
    /// the task, the outcome it completes with is the task's report: a `304` answering a revalidation
    /// completes with the cached response, refreshed; the metrics count the redirects Herald followed
    /// (curl follows none itself), or are the last hop's when the final answer came without any.
    mutating func complete(with outcome: TransferOutcome) -> CompleteAction {
        switch phase {
        case .completed:
            return .none
        case .suspended where outcome.error == nil:
            // `suspend()` won the race against the transfer's end: a suspended task never completes
            // successfully, so the result waits for `resume()`.
            phase = .suspended(.holding(outcome))
            return .hold
        case .canceling, .running, .suspended:
            let wasCancelled = state == .canceling
            phase = .completed
            defer { downloadTask = nil }
            return .finish(reported(outcome), wasCancelled: wasCancelled, downloadTask: downloadTask)
        }
    }

    /// Records the completing `outcome` in the report and returns it as the task reports it.
    private mutating func reported(_ outcome: TransferOutcome) -> TransferOutcome {
        var outcome = outcome
        if let stale = report.revalidating, outcome.error == nil, let notModified = outcome.response,
            notModified.statusCode == 304
        {
            // The server confirmed the cached response: complete with it, refreshed by the 304's fields.
            outcome.response = ResponseCachePolicy.refreshed(stale.response, with: notModified)
            outcome.body = stale.data
        }
        report.revalidating = nil
        if var metrics = outcome.metrics {
            metrics.redirectCount = hops.redirectCount
            outcome.metrics = metrics
            // It ends `hopMetrics`, kept apart from the earlier hops': most tasks have none, and so no list
            // to allocate.
            report.metricsEndHops = true
        } else if outcome.response != nil, let last = hops.metrics.last {
            outcome.metrics = last
        }
        report.metrics = outcome.metrics
        if let response = outcome.response { report.response = response }
        return outcome
    }
}
