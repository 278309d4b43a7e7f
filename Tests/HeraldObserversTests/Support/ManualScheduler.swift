import Herald
import HeraldNotifications
import HeraldObservers

/// An ``ObserverScheduler`` whose time moves only when a test calls ``advance(by:)``: delays are
/// checked exactly and instantly, without sleeping.
final class ManualScheduler: ObserverScheduler {
    private struct Pending {
        let deadline: Double
        let sequence: Int
        let work: @Sendable () -> Void
    }

    private struct State {
        var now = 0.0
        var pending: [Pending] = []
        var sequence = 0
    }

    private let state = Locked(State())

    /// Seconds since the scheduler was created.
    var now: Double { state.withLock { $0.now } }

    /// How many scheduled items have not run yet.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.sequence += 1
            state.pending.append(Pending(deadline: state.now + max(0, delay), sequence: state.sequence, work: work))
        }
    }

    /// Moves time forward by `seconds`, running what falls due in deadline order (outside the lock, so
    /// work may schedule more; that runs too if it falls due before the new time).
    func advance(by seconds: Double) {
        let target = state.withLock { $0.now + seconds }
        while true {
            let next = state.withLock { state -> Pending? in
                guard
                    let index = state.pending.indices.min(by: {
                        (state.pending[$0].deadline, state.pending[$0].sequence)
                            < (state.pending[$1].deadline, state.pending[$1].sequence)
                    }),
                    state.pending[index].deadline <= target
                else {
                    state.now = target
                    return nil
                }
                let item = state.pending.remove(at: index)
                state.now = item.deadline
                return item
            }
            guard let next else { return }
            next.work()
        }
    }
}
