import Foundation
import HeraldNotifications
/// Hands one task's completion to the one `async` caller awaiting it, exactly once, whichever comes first:
/// the completion (it may run before the caller suspends — a task cancelled before it started completes
/// on its own) or the caller's suspension.
final class AsyncCompletionRelay<Value: Sendable>: Sendable {
    private enum State {
        /// Neither the result nor the caller has arrived.
        case idle
        /// The caller is suspended, waiting.
        case awaiting(CheckedContinuation<Result<Value, HeraldError>, Never>)
        /// The result arrived first and is kept for the caller.
        case finished(Result<Value, HeraldError>)
        /// The caller has its result; anything later is ignored.
        case answered
    }

    private let state = Locked(State.idle)

    /// Records the result and resumes the caller if it is waiting. Only the first call counts.
    func resume(with result: Result<Value, HeraldError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<Value, HeraldError>, Never>? in
            switch state {
            case .idle:
                state = .finished(result)
                return nil
            case .awaiting(let continuation):
                state = .answered
                return continuation
            case .finished, .answered:
                return nil
            }
        }
        // Resumed outside the lock: resuming may run the caller's code inline.
        continuation?.resume(returning: result)
    }

    /// Suspends until ``resume(with:)`` has been called, or returns at once if it already was. Call once.
    func result() async -> Result<Value, HeraldError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<Value, HeraldError>? in
                switch state {
                case .idle:
                    state = .awaiting(continuation)
                    return nil
                case .finished(let result):
                    state = .answered
                    return result
                case .awaiting, .answered:
                    return .failure(HeraldError(.internal, "A task's completion was awaited twice."))
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

extension SessionManager {
    /// Creates a task with `make`, resumes it and suspends until its completion handler has run, with Swift
    /// task cancellation wired to ``SessionTask/cancel()``.
    ///
    /// When the calling task is already cancelled, the cancellation handler runs before the operation, so the
    /// task is cancelled while still suspended: no transfer starts, `resume()` is not called (a subclass in
    /// ``taskClasses`` sees no resume for a task that never ran), and the task completes (one
    /// `taskDidComplete`) with ``HeraldError/Code/cancelled``.
    ///
    /// A task whose class holds `resume()` back (an override that calls `super.resume()` later, when it sees
    /// fit) holds the call until it does; one that never does holds it until the calling Swift task is cancelled.
    ///
    /// With `keepsResumeData`, a download task is cancelled with ``DownloadTask/cancel(byProducingResumeData:)``:
    /// its partial file is kept, and the ``HeraldError/Code/cancelled`` error thrown carries its resume data.
    func performAsync<Value: Sendable>(
        keepsResumeData: Bool = false,
        _ make: (_ answer: @escaping @Sendable (Result<Value, HeraldError>) -> Void) throws(HeraldError) -> SessionTask
    ) async throws(HeraldError) -> Value {
        let relay = AsyncCompletionRelay<Value>()
        let task = try make { relay.resume(with: $0) }
        let result = await withTaskCancellationHandler {
            if !Task.isCancelled { task.resume() }
            return await relay.result()
        } onCancel: {
            if keepsResumeData, let download = task as? DownloadTask {
                // The cancelled error the completion handler gets carries the data.
                download.cancel(byProducingResumeData: { _ in })
            } else {
                task.cancel()
            }
        }
        return try result.get()
    }
}
