import Herald
import HeraldNotifications
import NIOCore

/// The requests parked at `/barrier/{n}?key=K`, released together once `n` of them with the same key wait.
///
/// Shared by every connection of one server. A barrier proves concurrency without timing: when `n` requests
/// complete through a barrier of `n`, all of them were in flight at the same moment.
final class BarrierRegistry: Sendable {
    private struct Parked {
        var count = 0
        var releases: [@Sendable () -> Void] = []
    }

    private let parked = Locked<[String: Parked]>([:])

    init() {}

    /// Parks one request; when it is the `count`-th of `key`, runs every parked request's `release`.
    ///
    /// `release` is called outside the lock, on the calling thread; it must hop to its own event loop.
    func arrive(key: String, count: Int, release: @escaping @Sendable () -> Void) {
        let ready = parked.withLock { parked -> [@Sendable () -> Void] in
            var entry = parked[key, default: Parked()]
            entry.count += 1
            entry.releases.append(release)
            guard entry.count >= count else {
                parked[key] = entry
                return []
            }
            parked[key] = nil
            return entry.releases
        }
        for release in ready { release() }
    }
}
