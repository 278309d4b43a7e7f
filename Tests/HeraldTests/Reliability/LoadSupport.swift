#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Herald
import HeraldNotifications
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
    private let count: Locked<Int>
    private let reachedZero = OneShot<Void>()

    init(_ count: Int) {
        self.count = Locked(count)
        if count <= 0 { reachedZero.send(()) }
    }

    var remaining: Int { count.withLock { $0 } }

    func countDown() {
        let isZero = count.withLock { count -> Bool in
            count -= 1
            return count == 0
        }
        if isZero { reachedZero.send(()) }
    }

    /// Waits until the count reaches zero; `false` if `timeout` passed first.
    func wait(timeout: Duration) async -> Bool {
        (try? await reachedZero.value(timeout: timeout)) != nil
    }
}
