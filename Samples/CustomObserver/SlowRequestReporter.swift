import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Synchronization

/// A plug-in observer written the way a user would: it conforms to `SessionObserver`, implements only
/// the methods it needs, keeps its own state behind a lock, and does nothing slow on the posting thread.
///
/// It reports every task that took longer than a threshold from its first resume to its completion,
/// and counts how many tasks it saw.
final class SlowRequestReporter: SessionObserver {
    /// A task's identity on a center several sessions may post to: task identifiers are unique within their
    /// session only.
    private struct TaskKey: Hashable {
        let session: Int
        let task: Int
    }

    private struct State {
        var started: [TaskKey: ContinuousClock.Instant] = [:]
        var completed = 0
        var slow: [String] = []
    }

    private let threshold: Duration
    private let state = Mutex(State())

    init(threshold: Duration) {
        self.threshold = threshold
    }

    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let now = ContinuousClock.now
        let key = TaskKey(session: notification.userInfo.sessionIdentifier, task: notification.userInfo.taskIdentifier)
        state.withLock { storage in
            // A task resumed again after a suspend keeps its first start time.
            if storage.started[key] == nil { storage.started[key] = now }
        }
    }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let now = ContinuousClock.now
        let completion = notification.userInfo
        state.withLock { storage in
            storage.completed += 1
            let key = TaskKey(session: completion.sessionIdentifier, task: completion.taskIdentifier)
            guard let start = storage.started.removeValue(forKey: key) else { return }
            let elapsed = now - start
            if elapsed > threshold {
                // Never a password on the terminal: the URL as the log shows it. Where the request was answered,
                // else (no response: a timeout, a refusal) the one it was sent to.
                let url = LogRedaction.default.redacting(completion.finalURL ?? completion.request.url)
                storage.slow.append("\(url) took \(elapsed.formatted(.units(allowed: [.milliseconds])))")
            }
        }
    }

    /// The tasks seen completing, and the slow ones.
    var report: (completed: Int, slow: [String]) {
        state.withLock { ($0.completed, $0.slow) }
    }
}
