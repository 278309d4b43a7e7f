#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Herald
import HeraldTesting

/// The process's descriptor limit (`RLIMIT_NOFILE`).
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one.
    ///
    /// - Returns: The soft limit now in force.
    @discardableResult
    static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Whether this process may hold `count` descriptors, after raising its soft limit.
    static func allows(_ count: Int) -> Bool { raiseToHard() >= count }
}

/// Counts down from a number of expected events and lets a test await zero with a deadline.
final class Countdown: Sendable {
    private struct State {
        var remaining: Int
        var waiter: CheckedContinuation<Bool, Never>?
        var expired = false
    }

    private let state: Locked<State>

    init(_ count: Int) { state = Locked(State(remaining: count)) }

    var remaining: Int { state.withLock { $0.remaining } }

    func countDown() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// Waits until the count reaches zero; `false` if `timeout` passed first.
    func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let done = self.state.withLock { state -> Bool in
                        if state.remaining <= 0 || state.expired { return true }
                        state.waiter = continuation
                        return false
                    }
                    if done { continuation.resume(returning: self.remaining <= 0) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first || remaining > 0 {
                // Unblock the waiting child so the group can finish.
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    state.expired = true
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: false)
            }
            group.cancelAll()
            return first
        }
    }
}
