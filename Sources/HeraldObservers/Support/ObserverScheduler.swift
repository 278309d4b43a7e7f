import Dispatch

/// Runs work after a delay: how time-based observers such as ``NetworkActivityIndicator`` wait.
///
/// Injected so that tests can drive time by hand instead of sleeping. Production code uses
/// ``DispatchObserverScheduler``.
public protocol ObserverScheduler: Sendable {
    /// Runs `work` once, about `delay` seconds from now, on a thread of the scheduler's choosing.
    ///
    /// Scheduled work cannot be cancelled; callers ignore work that is no longer wanted when it runs.
    /// - Parameters:
    ///   - delay: Seconds to wait; zero or negative means as soon as possible, but never synchronously.
    ///   - work: What to run.
    func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void)
}

/// An ``ObserverScheduler`` on a `DispatchQueue`, measuring time with the monotonic clock.
public struct DispatchObserverScheduler: ObserverScheduler {
    /// The queue the work runs on.
    public let queue: DispatchQueue

    /// Creates a scheduler running work on `queue`.
    /// - Parameter queue: Where scheduled work runs; default a global queue.
    public init(queue: DispatchQueue = .global()) {
        self.queue = queue
    }

    /// Runs `work` on ``queue`` after `delay` seconds.
    /// - Parameters:
    ///   - delay: Seconds to wait: none when not positive (NaN included), at most a year, the longest a session
    ///     waits before a retry.
    ///   - work: What to run.
    public func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Self.nanoseconds(forDelay: delay)), execute: work)
    }

    /// The longest delay waited for: a year, as a session's retries (a retry delay is clamped to it).
    static let maximumDelay: Double = 365 * 86_400

    /// `delay` seconds in nanoseconds, for `asyncAfter`: 0 when not positive or NaN, at most ``maximumDelay``.
    static func nanoseconds(forDelay delay: Double) -> Int {
        delay > 0 ? Int(min(delay, maximumDelay) * 1_000_000_000) : 0
    }
}
