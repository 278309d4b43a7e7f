import Synchronization

/// Counts down the observers a drain waits for, and calls its completion once, at zero.
///
/// Created with one extra count, which the drain itself gives up once it has handed the barrier to
/// every observer that must hold it: the completion can't run before all of them have been asked.
@usableFromInline
final class DrainBarrier: Sendable {
    private let remaining = Atomic<Int>(1)
    private let completion: @Sendable () -> Void

    init(completion: @escaping @Sendable () -> Void) {
        self.completion = completion
    }

    /// Counts one more observer to wait for; call before handing the barrier to it.
    func hold() {
        remaining.wrappingAdd(1, ordering: .relaxed)
    }

    /// Counts one observer done (or the drain's own count); the last one runs the completion.
    func arrive() {
        if remaining.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            completion()
        }
    }
}
