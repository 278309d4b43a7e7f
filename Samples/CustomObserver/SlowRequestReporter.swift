import Foundation
import Herald
import HeraldNotifications
import Synchronization

/// A plug-in observer written the way a user would: it conforms to `SessionObserver`, implements only
/// the methods it needs, keeps its own state behind a lock, and does nothing slow on the posting thread.
///
/// It reports every task that took longer than a threshold from its first resume to its completion,
/// and counts how many tasks it saw.
final class SlowRequestReporter: SessionObserver {
    private struct State {
        var started: [Int: ContinuousClock.Instant] = [:]
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
        state.withLock { storage in
            // A task resumed again after a suspend keeps its first start time.
            if storage.started[notification.userInfo.taskIdentifier] == nil {
                storage.started[notification.userInfo.taskIdentifier] = now
            }
        }
    }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let now = ContinuousClock.now
        let completion = notification.userInfo
        state.withLock { storage in
            storage.completed += 1
            guard let start = storage.started.removeValue(forKey: completion.taskIdentifier) else { return }
            let elapsed = now - start
            if elapsed > threshold {
                let url = completion.finalURL?.absoluteString ?? "?"
                storage.slow.append("\(url) took \(elapsed.formatted(.units(allowed: [.milliseconds])))")
            }
        }
    }

    /// The tasks seen completing, and the slow ones.
    var report: (completed: Int, slow: [String]) {
        state.withLock { ($0.completed, $0.slow) }
    }
}
