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
    ///   - delay: Seconds to wait.
    ///   - work: What to run.
    public func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        let nanoseconds = delay > 0 ? Int(min(delay, 86_400) * 1_000_000_000) : 0
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }
}
