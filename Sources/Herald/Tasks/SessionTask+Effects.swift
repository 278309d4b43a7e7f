import Dispatch
import Foundation
import HeraldNotifications
import HeraldEngine

/// A side effect of a task's transition: what ``TaskStateMachine`` decided, carried out after the task's
/// lock is released.
///
/// The retry's announcement is `indirect`: it is hundreds of bytes, and every array of effects and every pass
/// over one would copy it whole. An outcome is one reference to its box.
enum TaskEffect {
    /// Post `taskDidResume` or `taskDidSuspend` for the task.
    case announce(SessionTask, TaskState)
    /// Post `taskWillRetry`.
    indirect case announceRetry(SessionTask, RetryAnnouncement)
    /// Post `taskIsWaitingForConnectivity`, with the failure that showed there was no network.
    case announceConnectivityWait(SessionTask, HeraldError)
    /// Post `taskDidEndWaitingForConnectivity`, with the failure that began the wait.
    case announceConnectivityWaitEnded(SessionTask, HeraldError)
    /// Send the engine a command.
    case engine(TransferCommand)
    /// Hand a completed task to the session: serialize, run the completion handler, post `taskDidComplete`.
    case finish(SessionTask, TaskOutcome)
    /// Start a retry's timer: `asyncAfter` on the hook queue.
    case schedule(DispatchWorkItem, delay: TimeInterval)
    /// Cancel a retry's timer.
    case cancelTimer(DispatchWorkItem)
    /// Tell those waiting for a state of the task that it has been reached (see
    /// `SessionTask.whenHoldingOutcome(_:)`).
    case notify([@Sendable () -> Void])
}

/// What `taskWillRetry` says.
struct RetryAnnouncement {
    var attempt: Int
    var error: HeraldError
    var response: HTTPResponse?
    var delay: TimeInterval
    /// The byte a download's next attempt continues from; `nil` when it starts over.
    var continuesFromByte: Int64?
}

extension SessionTask {
    /// Carries out `effects`, then those other threads submitted meanwhile, until none is left (see
    /// ``transition(_:_:)``).
    func carryOut(_ effects: [TaskEffect]) {
        var batch = effects
        while !batch.isEmpty {
            for effect in batch { perform(effect) }
            batch = core.withLock { $0.effects.next() }
        }
    }

    private func perform(_ effect: TaskEffect) {
        switch effect {
        case .announce(let task, let state):
            session.eventPoster.taskDidTransition(task, to: state)
        case .announceRetry(let task, let retry):
            session.eventPoster.postRetry(of: task, retry)
        case .announceConnectivityWait(let task, let error):
            session.eventPoster.postConnectivityWait(of: task, error: error)
        case .announceConnectivityWaitEnded(let task, let error):
            session.eventPoster.postConnectivityWait(of: task, error: error, ended: true)
        case .engine(let command):
            session.send(command)
        case .finish(let task, let outcome):
            session.complete(task, with: outcome)
        case .schedule(let timer, let delay):
            hookQueue.asyncAfter(deadline: .now() + delay, execute: timer)
        case .cancelTimer(let timer):
            timer.cancel()
        case .notify(let waiters):
            for waiter in waiters { waiter() }
        }
    }
}
