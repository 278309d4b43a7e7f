import Dispatch

extension DispatchQueue {
    /// Runs `body` as a block queued on this queue now, behind whatever is queued already, and returns its
    /// result: on a serial queue, a look at the queue's state once the blocks before it have run.
    func queued<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in async { continuation.resume(returning: body()) } }
    }
}
