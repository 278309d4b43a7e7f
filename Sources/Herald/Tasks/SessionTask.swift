import Foundation
import HeraldNotifications
import Instrumentation
import HeraldEngine

/// The completion handler of a task: the response, the serializer's output and the error, AF-style.
///
/// Runs exactly once, on the session's ``SessionManager/completionQueue`` (inside its
/// ``SessionManager/completionGroup`` when one is set), before `taskDidComplete` is posted. On success
/// `responseObject` holds the serializer's output and `error` is `nil`; on failure `error` says why
/// (transport, cancellation, or the serializer's refusal) and `response` is whatever arrived.
public typealias TaskCompletionHandler =
    @Sendable (
        _ response: HTTPResponse?, _ responseObject: (any Sendable)?, _ error: HeraldError?
    ) -> Void

/// A unit of work in a ``SessionManager``: one request, its transfer and its lifecycle.
///
/// New tasks are suspended; call ``resume()`` to start. ``resume()``, ``suspend()`` and ``cancel()`` are
/// safe from any thread, any number of times, and each real state change happens exactly once and is
/// announced exactly once on the session's notification center (`taskDidResume`, `taskDidSuspend`, and
/// finally `taskDidComplete`). The task classes are `open`: a session hands out your subclass of
/// ``DataTask``, ``UploadTask`` or ``DownloadTask`` when ``SessionManager/taskClasses`` names it, and every
/// resume and suspend — yours, a progress object's, the session's — runs its overrides of ``resume()`` and
/// ``suspend()``. An override that calls `super` keeps the notifications exactly once; one that doesn't
/// leaves the state unchanged and posts nothing.
open class SessionTask: @unchecked Sendable, TransferDelegate {
    // Safety: every mutable member lives in `core`, a lock; the others are immutable and Sendable.

    /// The task's state machine, over the engine's transfers and the download task a data task becomes.
    typealias TaskMachine = TaskStateMachine<Transfer, DownloadTask>

    /// The task's locked state: its machine, and what the task keeps beside it that is not its lifecycle.
    struct Core {
        /// Changed only by ``SessionTask/transition(_:_:)``, the one entry point of every event: readable
        /// everywhere, writable in this file alone.
        fileprivate(set) var machine: TaskMachine
        /// The effects of transitions, waiting to be carried out outside the lock (see ``transition(_:_:)``).
        var effects = OrderedTurns<TaskEffect>()
        var taskDescription: String?
        /// The progress objects, made on first use, and the counts they start from.
        var progress = ProgressSlots()
        /// This task's own interceptor (see ``SessionTask/interceptor``).
        var interceptor: (any RequestInterceptor)?
        /// What a download's current attempt continues: its partial file's byte count and validator, sent as
        /// `Range` and `If-Range`; `nil` when the attempt asks for the whole body. Set when the task is made
        /// (from resume data) and when a retry is decided.
        var downloadContinuation: DownloadResumeData?
        /// Where a retry's continuation asks for the rest: the redirect's target the failed attempt's bytes came
        /// from; `nil` when that attempt followed no redirect (the attempt's own request is asked).
        var downloadContinuationTarget: URL?
        /// The task's hook queue and its executor, made on first use (see ``SessionTask/hooks``): most
        /// tasks never need one.
        var hooks: HookQueueExecutor?
        /// Between two transfers, the timer that ends the task with `timedOut` when its resource timeout passes
        /// before the next transfer starts (a hook that takes that long); cancelled when it starts or the task
        /// completes.
        var resourceDeadline: (any DispatchSourceTimer)?
        /// Whether the current transfer's response head set cookies that were stored when it arrived, so that the
        /// transfer's end doesn't take them again (see ``SessionTask/takeCookies(from:)``).
        var cookiesTakenAtHead = false
    }

    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The request as it was given to the factory.
    public let originalRequest: Request

    /// The trace context the task belongs to: ``Request/serviceContext`` when the request carried one,
    /// otherwise the task-local `ServiceContext.current` of the code that created the task; `nil` when there
    /// was neither. It is injected into the headers of every transfer the task runs and travels in every
    /// notification's ``RequestSummary/serviceContext``.
    public var serviceContext: ServiceContext? { trace?.serviceContext }

    let session: SessionManager
    let core: Locked<Core>
    /// The context and instrument taken at creation; `nil` when the task belongs to no trace.
    let trace: TaskTraceContext?
    /// What every lifecycle payload says about the request, made once.
    let requestSummary: RequestSummary
    /// The data task this download task continues, when a data task became a download
    /// (``ResponseDisposition/becomeDownload``); `nil` otherwise. See ``lifecycleSubject``.
    private let continued: SessionTask?
    /// Whether the completion handler only resumes an `async` caller (``TaskCallbacks/answersAwaitingCaller``).
    let answersAwaitingCaller: Bool

    /// A new task, suspended, with the callbacks its factory was given.
    init(creation: TaskCreation) {
        self.session = creation.session
        self.taskIdentifier = creation.identifier
        self.originalRequest = creation.request
        let trace = TaskTraceContext.make(for: creation.request, through: creation.session.taskTraceContext)
        self.trace = trace
        self.requestSummary = RequestSummary(creation.request, serviceContext: trace?.serviceContext)
        self.core = Locked(Core(machine: TaskMachine(callbacks: creation.callbacks)))
        self.continued = nil
        self.answersAwaitingCaller = creation.callbacks.answersAwaitingCaller
    }

    /// A download task that continues the data task `task`, which became a download: the same identifier,
    /// request, state, transfer, progress and completion handler.
    init(continuing task: SessionTask) {
        self.session = task.session
        self.taskIdentifier = task.taskIdentifier
        self.originalRequest = task.originalRequest
        self.trace = task.trace
        self.requestSummary = task.requestSummary
        self.core = task.core
        self.continued = task.lifecycleSubject
        self.answersAwaitingCaller = false
    }

    /// Runs `event` on the task's machine under the task's lock and hands its action to `handle`, still under
    /// the lock, which returns a result and the effects to carry out; after releasing the lock, carries the
    /// effects out, in order, one thread at a time and in the order of the transitions (``OrderedTurns``), and
    /// returns the result. The one way anything changes the machine.
    @discardableResult
    func transition<Action, Result>(
        _ event: (inout TaskMachine) -> Action, _ handle: (Action, inout Core) -> (Result, [TaskEffect])
    ) -> Result {
        let (result, effects) = core.withLock { core -> (Result, [TaskEffect]) in
            let action = event(&core.machine)
            let (result, effects) = handle(action, &core)
            return (result, core.effects.submit(effects))
        }
        carryOut(effects)
        return result
    }

    /// Runs `event` on the task's machine through ``transition(_:_:)``, carries out the effects `effects` makes
    /// of its action, and returns the action for the caller to switch on.
    @discardableResult
    func transition<Action>(
        _ event: (inout TaskMachine) -> Action, effects: (Action) -> [TaskEffect] = { _ in [] }
    ) -> Action {
        transition(event) { action, _ in (action, effects(action)) }
    }

    /// Reads the task's machine under the task's lock: its state, its report, its hops.
    func machine<Value>(_ read: (borrowing TaskMachine) -> Value) -> Value {
        core.withLock { read($0.machine) }
    }

    /// Whether the task has completed: a cancel or the resource timeout completes a task between transfers at
    /// once, while a hook may still be deciding its next hop. What the hook then returns is ignored, and no
    /// further hook is called for the task.
    final var hasCompleted: Bool { machine { $0.taskState == .completed } }

    /// Whether a transfer finished while the task was suspended and its outcome waits for ``resume()``
    /// or ``cancel()``.
    var isHoldingOutcome: Bool { machine { $0.isHoldingOutcome } }

    /// Calls `action` once a transfer has finished while the task was suspended and its outcome is held
    /// (at once when it already is): what tests await to know the hold has happened, without polling.
    /// `action` runs on the thread that made the hold, after the task's lock is released.
    func whenHoldingOutcome(_ action: @escaping @Sendable () -> Void) {
        switch transition({ $0.whenHoldingOutcome(action) }) {
        case .runNow: action()
        case .wait: break
        }
    }

    /// The task that lifecycle notifications and task hooks name: for a download task a data task became,
    /// the data task the caller holds; otherwise the task itself.
    var lifecycleSubject: SessionTask { continued ?? self }

    /// The task's current state.
    public var state: TaskState { machine { $0.taskState } }

    /// The response head, once it has arrived.
    public var response: HTTPResponse? { machine { $0.report.response } }

    /// The error the task completed with, once completed with one.
    public var error: HeraldError? { machine { $0.report.error } }

    /// curl's metrics, once the task has completed after reaching the network.
    public var metrics: TransferMetrics? { machine { $0.report.metrics } }

    /// A description for your own use, such as a label for logs. Herald never reads it — in particular
    /// it plays no part in deciding which session owns the task.
    public var taskDescription: String? {
        get { core.withLock { $0.taskDescription } }
        set { core.withLock { $0.taskDescription = newValue } }
    }

    /// Starts or continues the task. Does nothing unless the task is suspended.
    ///
    /// The first resume hands the request to the engine; later ones unpause the transfer where it
    /// stopped, without transferring again what already arrived. Posts `taskDidResume` when the state
    /// really changed.
    open func resume() {
        // The cache is the caller's code: consulted before taking the task's lock, and only for a first resume.
        let cached = cacheLookup()
        var revalidation: TaskMachine.Revalidation?
        if case .stale(let entry, let validators) = cached {
            revalidation = TaskMachine.Revalidation(stale: entry, validators: validators)
        }
        // For a first resume, the interceptor is read in the same critical section as the transition.
        let start = transition({ $0.resume(revalidating: revalidation) }) {
            action, core -> (FirstStart?, [TaskEffect]) in
            let announce = TaskEffect.announce(self, .running)
            switch action {
            case .none:
                return (nil, [])
            case .start(let validators):
                return (FirstStart(interceptor: core.interceptor, validators: validators), [announce])
            case .unpause(let transfer):
                return (nil, [announce, .engine(.unpause(transfer))])
            case .startTransfer(let transfer):
                return (nil, [announce, .engine(.start(transfer))])
            case .complete(let completion):
                // The transfer finished while suspended: the task completes now that it runs again.
                return (nil, [announce, finishing(completion)])
            case .announce:
                return (nil, [announce])
            }
        }
        guard let start else { return }
        startFirstTransfer(cached: cached, start)
    }

    /// Pauses a running task; the connection stays open and the transfer continues from the same byte
    /// on ``resume()``. Does nothing unless the task is running. Posts `taskDidSuspend` when the state
    /// really changed.
    ///
    /// A suspended task never completes successfully: if the transfer had already received its last
    /// byte when `suspend()` won the race, the finished response is held, and the task completes with
    /// it right after the next ``resume()`` (`taskDidResume`, then `taskDidComplete`), or as cancelled
    /// on ``cancel()``. A transfer that fails while suspended (a timeout) completes with its error.
    ///
    /// A task suspended while it waits for a connection (``SessionConfiguration/maximumConnectionsPerHost``)
    /// gives up its place, and takes one again on ``resume()``. Once it has a connection, it keeps it while
    /// suspended: other requests to that host then wait for it when the limit is reached.
    ///
    /// A paused connection may be closed by the server after its idle timeout; the task then fails
    /// with ``HeraldError/Code/networkConnectionLost`` after resuming. The session's resource timeout
    /// keeps running while suspended.
    open func suspend() {
        transition({ $0.suspend() }) { action in
            switch action {
            case .none: []
            case .announce: [.announce(self, .suspended)]
            case .pause(let transfer): [.announce(self, .suspended), .engine(.pause(transfer))]
            }
        }
    }

    /// Cancels the task. It completes with ``HeraldError/Code/cancelled``: the completion handler runs
    /// and `taskDidComplete` is posted, exactly once. Does nothing once the task is canceling or
    /// completed.
    open func cancel() { stop(reporting: Self.cancellation(for: originalRequest.url)) }

    /// Stops the task as ``cancel()`` does, completing it with `error`: `cancelled` for a cancel, or the session's
    /// own refusal of what the task received (an event stream's status or content type), which the completion
    /// and `taskDidComplete` report as that error, not as a cancellation.
    final func stop(reporting error: HeraldError) {
        let stopped = transition({ $0.cancel(error: error) }) { action, _ -> (Bool, [TaskEffect]) in
            switch action {
            case .none:
                return (false, [])
            case .stop(let transfer):
                // A cancel names the transfer's own URL (a redirect's target, say), as the engine's errors do.
                let stopped = error.code == .cancelled ? Self.cancellation(for: transfer.request.url) : error
                return (true, [.engine(.remove(transfer, error: TransferError(stopped)))])
            case .complete(let completion, let retryTimer):
                // Nothing is in the engine: a retry's pending timer is cancelled, and the task completes now.
                return (true, (retryTimer.map { [.cancelTimer($0)] } ?? []) + [finishing(completion)])
            }
        }
        if stopped { didStop(reporting: error) }
    }

    /// The task was stopped with `error`, before its completion: a streamed body drops what waits for its
    /// consumer now (``DataTask`` overrides this).
    func didStop(reporting error: HeraldError) {}

    static func cancellation(for url: URL) -> HeraldError {
        HeraldError(.cancelled, "The task was cancelled.", url: url)
    }

    // MARK: - TransferDelegate (engine loop thread; the kinds override what differs)

    package func transferDidReceiveResponse(_ head: ResponseHead) {
        let response = HTTPResponse(head)
        if session.configuration.httpShouldSetCookies, response.headers.contains("Set-Cookie") {
            // Taken as the head arrives, as browsers take them: a long response (an event stream, a large
            // download) must not hold back, for as long as it runs, a cookie the requests made meanwhile need.
            session.storeCookies(from: response)
            core.withLock { $0.cookiesTakenAtHead = true }
        }
        didReceiveResponse(response)
    }

    /// Stores the cookies of `outcome`'s response, unless they were taken when its head arrived, or it came
    /// from the cache (taken when it came over the network; taking them again would bring back what the caller
    /// or the server has removed since). Loop thread, as each transfer ends.
    final func takeCookies(from outcome: TaskOutcome) {
        guard let response = outcome.response, !outcome.isFromCache, response.headers.contains("Set-Cookie")
        else { return }
        let takenAtHead = core.withLock { core in
            defer { core.cookiesTakenAtHead = false }
            return core.cookiesTakenAtHead
        }
        if !takenAtHead { session.storeCookies(from: response) }
    }

    package func transferNeedsResponseDisposition(_ head: ResponseHead, transfer: Transfer) {
        needsResponseDisposition(HTTPResponse(head), transfer: transfer)
    }

    package func proceed(after outcome: TransferOutcome) {
        // A data task that became a download hands the transfer to it when the engine carries out the answer.
        // A transfer that failed before that (its connection lost while the hook ran) or while doing it (the
        // download's file could not be opened) still reports here: the download runs the task from now on, so
        // that a retry is its next attempt, to its file. Only a failure can end such a transfer before the
        // hand-over: a finished body is held for the answer.
        if outcome.error != nil, let download = machine({ $0.downloadTask }), download !== self {
            return download.proceed(after: TaskOutcome(outcome))
        }
        proceed(after: TaskOutcome(outcome))
    }

    /// A response head arrived: this transfer's last one.
    func didReceiveResponse(_ response: HTTPResponse) {
        transition { $0.responseArrived(response) }
    }

    package func transferDidBeginBody(at offset: Int64, expected: Int64?) {
        // Each attempt's body has its own total: a retry answered in chunks has none, whatever the failed
        // attempt declared.
        let object = core.withLock { core -> TransferProgress? in
            core.progress.downloadCounts.restart(total: expected)
            return core.progress.download
        }
        object?.restart(total: expected)
        didBeginBody(at: offset, expected: expected)
    }

    /// The final response's body starts at `offset` of the representation. Loop thread; download tasks report
    /// it.
    func didBeginBody(at offset: Int64, expected: Int64?) {}

    package func transferDidReceiveBytes(total received: Int64, expected: Int64?) {
        let (object, handler) = core.withLock { core -> (TransferProgress?, ProgressHandler?) in
            core.progress.downloadCounts.record(completed: received, total: expected)
            let handler = core.machine.progressHandler(upload: false)
            return (self.progress(upload: false, forHandler: handler, in: &core), handler)
        }
        object?.update(completed: received, total: expected, queue: session.completionQueue, handler: handler)
    }

    package func transferDidSendBytes(_ count: Int64, total sent: Int64, expected: Int64?) {
        let (object, handler) = core.withLock { core -> (TransferProgress?, ProgressHandler?) in
            core.progress.uploadCounts.record(completed: sent, total: expected)
            let handler = core.machine.progressHandler(upload: true)
            return (self.progress(upload: true, forHandler: handler, in: &core), handler)
        }
        object?.update(completed: sent, total: expected, queue: session.completionQueue, handler: handler)
        guard let hook = session.taskDidSendBodyData else { return }
        // The bytes this read handed over, as the engine counted them: a total that starts again (a body
        // rewound, a next hop or a retry sending it anew) says nothing of how many were just sent.
        let subject = lifecycleSubject
        session.runOnCompletionQueue { hook(subject, count, sent, expected) }
    }

    /// A piece of the response body, for the `dataTaskDidReceiveData` hook: only data tasks have one.
    package func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {}

    /// The final response, paused for the `dataTaskDidReceiveResponse` hook: only data tasks have one, so
    /// other tasks let the transfer continue.
    func needsResponseDisposition(_ response: HTTPResponse, transfer: Transfer) {
        session.send(.allowResponse(transfer))
    }

    /// A `401` libcurl answered itself (Digest) set cookies: stored now, as any response's are, for the requests
    /// after this transfer. (libcurl's authenticated resend carries the `Cookie` field the transfer started
    /// with.) Loop thread, inside the header callback: the store takes its lock and queues its save.
    final package func transferDidReceiveInterimChallenge(_ head: ResponseHead) {
        session.storeCookies(from: HTTPResponse(head))
    }

    /// What follows a finished transfer, on the engine's loop thread for every transfer: cookies, then the
    /// next hop, a retry, or completing the task. It never runs or waits for user code: the hooks a hop
    /// needs run on ``hookQueue`` and start the next transfer, and a completed task goes to the completion
    /// queue (``SessionManager/complete(_:with:)``).
    func proceed(after outcome: TaskOutcome) {
        // Before the next hop is built: a Set-Cookie on a 302 or a 401 goes with the next request. Not from a
        // stored response: its cookies were taken when it came over the network, and taking them again would
        // bring back what the caller or the server has removed since.
        takeCookies(from: outcome)
        if beginNextHop(after: outcome) { return }
        if beginWaitingForConnectivity(after: outcome) { return }
        if beginRetry(after: outcome) { return }
        completeTransfer(outcome)
    }

    // MARK: - task kinds (overridden by DataTask, UploadTask and DownloadTask)

    /// Whether the session's ``SessionConfiguration/responseCache`` serves and stores this task's responses:
    /// data tasks only.
    var usesResponseCache: Bool { false }

    /// Whether this task's transfers report to the data-task hooks (``SessionManager/dataTaskDidReceiveResponse``,
    /// ``SessionManager/dataTaskDidReceiveData``): data and upload tasks.
    var receivesDataTaskHooks: Bool { false }

    /// Whether this task sends a body of its own, not its request's: an upload task, and the download one became.
    var sendsUploadBody: Bool { false }

    /// Whether every attempt of this task sends a streamed body, which only
    /// ``SessionManager/taskNeedNewBodyStream`` can give again: an upload task made from a stream, and the
    /// download one became. It is the task's, whatever the hop now running sends (a `303`'s `GET` sends none).
    var sendsStreamedBody: Bool { false }

    /// What the engine must do for one attempt of this task: `request` (the original, or an adapter's
    /// version of it), its body source and its body sink. Called once per attempt, never with the task's
    /// lock held.
    func makeTransferRequest(for request: Request) -> TransferRequest {
        session.transferRequest(for: request, body: request.body.map { .data($0) })
    }

    /// The error a task completes with when the retrier declined to send attempt number `attempt` again,
    /// after it was shown `failure`: the transfer's own error, if any. A download overrides it. Hook queue.
    func finalError(of outcome: TaskOutcome, failure: HeraldError, attempt: Int) -> HeraldError? {
        outcome.error
    }

    /// Completes the task with the response of `current`, a transfer that was to lead to another (a redirect
    /// not followed after all, a challenge no credential answers): that response is the task's result. Hook
    /// queue. A data task first shows it to the data-task hooks, which it was kept from while it arrived.
    func completeWithHopResponse(_ outcome: TaskOutcome, from current: TransferRequest) {
        // A 401 no credential answered is the attempt's result, which the retrier is shown as any failed one (a
        // token to refresh): whether a challenge hook or a stored credential was there to decline doesn't change it.
        if beginRetry(after: outcome, afterHop: true) { return }
        finishHop(outcome, error: nil)
    }

    /// Prepares the next attempt after the failed `outcome`, before the retrier is asked (a task completed while
    /// it decides, by a cancel or the resource timeout, keeps what the attempt left); returns the byte that
    /// attempt would continue from, `nil` when it starts over. Only a download continues: other tasks send their
    /// request again as it was. Loop thread.
    func prepareRetry(after outcome: TaskOutcome) -> Int64? { nil }

    /// Turns the transfer's outcome into what the completion handler and `taskDidComplete` carry. Runs
    /// once per task, before the completion handler: on the session's own completion queue, or on the hook
    /// queue when the caller passed the completion queue (never the loop thread).
    func completionResult(for outcome: TaskOutcome, serializer: any ResponseSerializer) -> CompletionResult {
        ResponseBodyHandling.serialized.completionResult(for: outcome, serializer: serializer, url: originalRequest.url)
    }
}
