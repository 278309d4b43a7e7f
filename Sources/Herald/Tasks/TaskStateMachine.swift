import Dispatch
import Foundation

/// A task's whole lifecycle as a value: the state its user sees, where its transfer work stands, what it
/// remembers across transfers (redirects, authentication round-trips, retries), and the download task a
/// data task became.
///
/// Every transition is a `mutating` method that returns what the owner must do. ``SessionTask`` calls it
/// under the task's lock and carries the answer out after releasing the lock, through its effect
/// pipeline (`SessionTask+Effects.swift`), so no notification is posted, no engine command sent and no
/// hook run while the lock is held.
///
/// `suspended` (new tasks start here) → `running` ⇄ `suspended`; `running`/`suspended` → `canceling` →
/// `completed`; `running` → `completed`. A transfer that finishes while the task is suspended never
/// completes it: its outcome is held until ``resume()`` (or completes as cancelled on ``cancel()``).
struct TaskStateMachine {
    /// Where the task's transfers stand, beside ``state``.
    enum Work {
        /// Never resumed.
        case notStarted
        /// Between two transfers: the first is being prepared, an adapter runs, the next hop or a retry is
        /// being decided off the loop thread, or a retry waits for its delay on `retryTimer`.
        case betweenTransfers(retryTimer: DispatchWorkItem?)
        /// A transfer is in the engine, or on its way there.
        case transferring(Transfer)
        /// The next transfer was prepared while the task was suspended: ``resume()`` starts it.
        case readyToStart(Transfer)
        /// The transfer finished without an error while the task was suspended: ``resume()`` completes the
        /// task with this outcome.
        case holding(TransferOutcome)
        /// The task completed.
        case finished
    }

    private(set) var state: TaskState = .suspended
    private(set) var work: Work = .notStarted
    /// What the task remembers across the transfers it runs.
    var hops = TaskHops()
    /// The download task this data task became (``ResponseDisposition/becomeDownload``); it is the task that
    /// completes. Set while the transfer runs, cleared at completion.
    private(set) var downloadTask: DownloadTask?

    /// Whether ``resume()`` has ever started the task.
    var hasStarted: Bool {
        if case .notStarted = work { return false }
        return true
    }

    /// Whether the task can still change: neither cancelled nor completed.
    var isLive: Bool { state == .running || state == .suspended }

    /// The transfer running now, if any.
    var currentTransfer: Transfer? {
        if case .transferring(let transfer) = work { return transfer }
        return nil
    }

    // MARK: - the user's calls

    enum ResumeAction {
        /// Not suspended: nothing changes.
        case none
        /// The first resume: announce it, then prepare the first transfer (or serve the cache, or run the
        /// adapter) and hand it over with ``transferPrepared(_:)``.
        case start
        /// Announce, and continue the paused transfer where it stopped.
        case unpause(Transfer)
        /// Announce, and hand the engine the transfer prepared while suspended.
        case startTransfer(Transfer)
        /// Announce, and complete the task with the outcome held while suspended.
        case complete(TransferOutcome)
        /// Announce only: the task is between two transfers, and the next starts when it is ready.
        case announce
    }

    mutating func resume() -> ResumeAction {
        guard state == .suspended else { return .none }
        state = .running
        switch work {
        case .notStarted:
            work = .betweenTransfers(retryTimer: nil)
            return .start
        case .transferring(let transfer):
            return .unpause(transfer)
        case .readyToStart(let transfer):
            work = .transferring(transfer)
            return .startTransfer(transfer)
        case .holding(let outcome):
            work = .betweenTransfers(retryTimer: nil)
            return .complete(outcome)
        case .betweenTransfers, .finished:
            return .announce
        }
    }

    enum SuspendAction {
        /// Not running: nothing changes.
        case none
        /// Announce only: no transfer runs now (the next one waits for ``resume()``).
        case announce
        /// Announce, and pause the transfer.
        case pause(Transfer)
    }

    mutating func suspend() -> SuspendAction {
        guard state == .running else { return .none }
        state = .suspended
        if case .transferring(let transfer) = work { return .pause(transfer) }
        return .announce
    }

    enum CancelAction {
        /// Already cancelled or completed: nothing changes.
        case none
        /// Never started: complete with `cancelled` without touching the engine.
        case completeUnstarted
        /// Stop the transfer; the engine finishes it with `cancelled`, which completes the task.
        case stop(Transfer)
        /// Complete (as cancelled) with the outcome held while suspended.
        case complete(TransferOutcome)
        /// Between two transfers, nothing is in the engine: complete at once with `cancelled`, after
        /// cancelling a retry's pending timer.
        case completeBetweenTransfers(retryTimer: DispatchWorkItem?)
    }

    mutating func cancel() -> CancelAction {
        guard isLive else { return .none }
        state = .canceling
        switch work {
        case .notStarted:
            return .completeUnstarted
        case .transferring(let transfer):
            return .stop(transfer)
        case .holding(let outcome):
            work = .betweenTransfers(retryTimer: nil)
            return .complete(outcome)
        case .readyToStart:
            work = .betweenTransfers(retryTimer: nil)
            return .completeBetweenTransfers(retryTimer: nil)
        case .betweenTransfers(let timer):
            work = .betweenTransfers(retryTimer: nil)
            return .completeBetweenTransfers(retryTimer: timer)
        case .finished:
            return .none
        }
    }

    // MARK: - between transfers

    /// The running transfer ended with a response that leads to another transfer (a redirect to follow,
    /// a challenge to answer, a failure to show the retrier). Returns the transfer that ended, or `nil` when
    /// the task is no longer running it (cancelled meanwhile): then the task completes instead.
    mutating func transferEndsBetweenTransfers() -> Transfer? {
        guard isLive, case .transferring(let transfer) = work else { return nil }
        work = .betweenTransfers(retryTimer: nil)
        return transfer
    }

    /// A retry waits `timer`'s delay. Returns `false` when the task was cancelled meanwhile.
    mutating func retryScheduled(_ timer: DispatchWorkItem) -> Bool {
        guard isLive, case .betweenTransfers = work else { return false }
        work = .betweenTransfers(retryTimer: timer)
        return true
    }

    /// A new attempt starts (its delay is over). Returns `false` when the task was cancelled meanwhile.
    mutating func attemptStarts() -> Bool {
        guard isLive, case .betweenTransfers = work else { return false }
        work = .betweenTransfers(retryTimer: nil)
        return true
    }

    enum PreparedAction {
        /// Cancelled meanwhile: drop the transfer.
        case none
        /// Running: hand the transfer to the engine.
        case start(Transfer)
        /// Suspended: keep the transfer until ``resume()``.
        case wait
    }

    /// The next transfer (the first one too) is ready.
    mutating func transferPrepared(_ transfer: Transfer) -> PreparedAction {
        guard isLive, case .betweenTransfers = work else { return .none }
        if state == .running {
            work = .transferring(transfer)
            return .start(transfer)
        }
        work = .readyToStart(transfer)
        return .wait
    }

    /// The data task becomes `download` while `transfer` runs. Returns `false` when the task no longer runs
    /// it (cancelled while the hook ran).
    mutating func becomeDownload(_ download: DownloadTask, runningTransfer transfer: Transfer) -> Bool {
        guard isLive, case .transferring(let running) = work, running === transfer else { return false }
        downloadTask = download
        return true
    }

    // MARK: - completion

    enum CompleteAction {
        /// Already completed: nothing happens (exactly once).
        case none
        /// The task is suspended: the outcome is held for ``resume()``.
        case hold
        /// The task completes; `wasCancelled` says its error must be `cancelled`, and `downloadTask` is the
        /// download task a data task became, which completes it.
        case finish(wasCancelled: Bool, downloadTask: DownloadTask?)
    }

    /// The task's last transfer (or the cache, or a cancellation) produced `outcome`.
    mutating func complete(with outcome: TransferOutcome) -> CompleteAction {
        if state == .suspended, outcome.error == nil {
            // `suspend()` won the race against the transfer's end: a suspended task never completes
            // successfully, so the result waits for `resume()`.
            work = .holding(outcome)
            return .hold
        }
        guard state != .completed else { return .none }
        let wasCancelled = state == .canceling
        state = .completed
        work = .finished
        defer { downloadTask = nil }
        return .finish(wasCancelled: wasCancelled, downloadTask: downloadTask)
    }
}
