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
/// is released but in the order of the transitions (see `TaskEffectQueue`), which fixes their order to the
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

    /// Runs `work` on the event queue.
    func async(_ work: @escaping @Sendable () -> Void) {
        eventQueue.async(execute: work)
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
