import Dispatch
import Foundation
import HeraldNotifications

/// Posts a session's task lifecycle notifications — `taskDidResume`, `taskDidSuspend`,
/// `downloadDidFailToMoveFile`, `taskWillRetry`, `taskDidComplete` — from the session's serial event queue.
///
/// It is the only code in the library that posts them. ``SessionTask/resume()``, ``SessionTask/suspend()``
/// and the completion path report each real state change here, once, so that every call — from user code,
/// a progress object, the session, a subclass's override that calls `super` — is announced exactly when
/// the state changed: what AFNetworking gets by swizzling `resume`/`suspend`.
///
/// One per session, posting only on that session's center, so a task never announces itself to another
/// session's observers. Each event is an effect of the task's transition, carried out after the task's lock
/// is released but in the order of the transitions (the task's `OrderedTurns`), which fixes their order to the
/// order of the state changes themselves.
final class SessionEventPoster: Sendable {
    let center: NotificationHub
    let sessionIdentifier: Int
    /// Every lifecycle notification of the session is posted from this serial queue, in causal order. It
    /// is a queue of its own, targeting no queue the session's transfers or completion handlers use: a
    /// `.posting` observer that takes its time delays the session's later notifications and nothing else.
    let eventQueue: DispatchQueue
    /// Connection changes the loop thread handed over, waiting for their post on the event queue.
    let pendingConnectionChanges = Locked(PendingConnectionChanges())

    init(center: NotificationHub, sessionIdentifier: Int) {
        self.center = center
        self.sessionIdentifier = sessionIdentifier
        self.eventQueue = DispatchQueue(label: "herald.session.\(sessionIdentifier).events")
    }

    /// The work handed to the event queue and not yet run, in the order it was handed over.
    private let backlog = Locked(EventBacklog())

    /// How long the completion queue keeps the work of a run of completions before it wakes the event queue
    /// anyway (see ``holdingWakeUps(over:limit:_:)``).
    static let holdLimit: UInt64 = 1_000_000

    /// Runs `work` on the event queue, after all work handed over before it, by any thread.
    ///
    /// The work goes into one list, which a block on the event queue runs until the list is empty: while that
    /// block is queued or running, handing over more wakes no thread. Work the thread inside
    /// ``holdingWakeUps(over:limit:_:)`` hands over doesn't queue the block: it waits for the hold to let it
    /// go, or for another thread's work, which queues the block for everything before it too.
    func async(_ work: @escaping @Sendable () -> Void) {
        let thread = pthread_self()
        let wakes = backlog.withLock { backlog -> Bool in
            backlog.work.append(work)
            return backlog.holder != thread && backlog.claimDrain()
        }
        if wakes { eventQueue.async { self.drain() } }
    }

    /// Calls `body` with each of `items` in turn (the completion queue, with the completions of one loop
    /// iteration), holding back the wake-up of the event queue for the work this thread hands over meanwhile:
    /// it goes to the event queue together after the last item, or after the first item that ends more than
    /// `limit` nanoseconds (default ``holdLimit``, a millisecond) after the hold began or was last let go.
    /// At 64 requests in flight with observers, that halved the event queue's wake-ups, each a thread switch.
    ///
    /// The order of the notifications is unchanged; only when the event queue starts on them. An item that
    /// takes long (a slow completion handler) delays, by as long, the notifications of the items before it in
    /// the same run, never a transfer; and an item that blocks until the event queue has run work it handed
    /// over itself waits for ever (the session's blocking waits refuse to run on its completion queue). One
    /// thread holds at a time: the session's serial completion queue.
    func holdingWakeUps<Item>(over items: [Item], limit: UInt64 = holdLimit, _ body: (Item) -> Void) {
        backlog.withLock { $0.holder = pthread_self() }
        var since = DispatchTime.now().uptimeNanoseconds
        for item in items {
            body(item)
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- since > limit {
                letHeldWorkGo(endingHold: false)
                since = now
            }
        }
        letHeldWorkGo(endingHold: true)
    }

    /// Queues the block that runs the waiting work, unless it is queued already or nothing waits.
    private func letHeldWorkGo(endingHold: Bool) {
        let wakes = backlog.withLock { backlog -> Bool in
            if endingHold { backlog.holder = nil }
            return backlog.claimDrain()
        }
        if wakes { eventQueue.async { self.drain() } }
    }

    /// Runs the work handed over, in order, until none is left. Event queue.
    ///
    /// The list taken out is emptied and swapped back in the next time round, keeping its storage: handing
    /// work over allocates only when a batch outgrows every batch before it.
    private func drain() {
        var batch: [@Sendable () -> Void] = []
        while true {
            backlog.withLock { backlog in
                if backlog.work.isEmpty { backlog.isDrainQueued = false }
                swap(&batch, &backlog.work)
            }
            if batch.isEmpty { return }
            for item in batch { item() }
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// Called right after a real transition to `running` or `suspended`, in the order of the transitions.
    func taskDidTransition(_ task: SessionTask, to state: TaskState) {
        // Nobody observes this name: nothing to order, so no hand-off to the event queue (a thread wake-up
        // per resume otherwise). An observer added later sees the events that follow its registration.
        switch state {
        case .running: guard center.hasObservers(for: .taskDidResume) else { return }
        case .suspended: guard center.hasObservers(for: .taskDidSuspend) else { return }
        case .canceling, .completed: return
        }
        let date = Date()
        let task = task.lifecycleSubject
        let taskIdentifier = task.taskIdentifier
        let center = center
        let sessionIdentifier = sessionIdentifier
        async {
            let event = TaskLifecycleEvent(
                taskIdentifier: taskIdentifier, sessionIdentifier: sessionIdentifier, date: date,
                request: task.requestSummary)
            switch state {
            case .running: center.post(.taskDidResume, object: task, userInfo: event)
            case .suspended: center.post(.taskDidSuspend, object: task, userInfo: event)
            case .canceling, .completed: break
            }
        }
    }

    /// Posts `downloadDidFailToMoveFile` on the event queue: before the task's `taskDidComplete`, which is
    /// queued there only after the completion handler ran.
    func postMoveFailure(of task: DownloadTask, error: HeraldError, sourceURL: URL, destinationURL: URL) {
        let failure = DownloadMoveFailure(
            taskIdentifier: task.taskIdentifier, sessionIdentifier: sessionIdentifier, date: Date(),
            request: task.requestSummary, error: error, sourceURL: sourceURL, destinationURL: destinationURL)
        let center = center
        let subject = task.lifecycleSubject
        async { center.post(.downloadDidFailToMoveFile, object: subject, userInfo: failure) }
    }

    /// Posts `taskDidComplete`; called on the event queue after the completion handler ran.
    ///
    /// Every notification names ``SessionTask/lifecycleSubject``: for a data task that became a download,
    /// the data task the caller holds, so it is announced exactly once from resume to completion.
    func postCompletion(of task: SessionTask, _ completion: @autoclosure () -> TaskCompletion) {
        dispatchPrecondition(condition: .onQueue(eventQueue))
        center.post(.taskDidComplete, object: task.lifecycleSubject, userInfo: completion())
    }
}

/// The work handed to a session's event queue and not yet run (see `SessionEventPoster.async`).
struct EventBacklog {
    /// The work, in the order it was handed over.
    var work: [@Sendable () -> Void] = []
    /// Whether a block that runs `work` is queued on the event queue, or running.
    var isDrainQueued = false
    /// The thread inside `SessionEventPoster.holdingWakeUps(over:limit:_:)`, if any.
    var holder: pthread_t?

    /// Whether the caller is to queue the block that runs `work`: there is work and no such block is queued or
    /// running (it then counts as queued).
    mutating func claimDrain() -> Bool {
        guard !work.isEmpty, !isDrainQueued else { return false }
        isDrainQueued = true
        return true
    }
}
