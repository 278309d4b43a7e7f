import Dispatch

// The one place hooks run: the hooks the transport waits for (`taskWillPerformHTTPRedirection`, the
// challenge hooks, `taskNeedNewBodyStream`, `dataTaskDidReceiveResponse`), interceptors' `adapt` and
// `retry`, a retry's delay, a connectivity wait's end. Never the loop thread, where a slow hook would stall
// every transfer of the engine; never the completion queue, where it would wait behind other tasks'
// handlers and they behind it. The queue is concurrent, so a slow hook holds back its own task only.
extension SessionTask {
    /// Where hooks, interceptors and hop decisions run: a concurrent queue shared by every session.
    static let hookQueue = DispatchQueue(label: "herald.hooks", qos: .userInitiated, attributes: .concurrent)

    /// Runs an interceptor's `adapt` or `retry` (and the rest of `body`) on ``hookQueue``: the Swift
    /// concurrency task prefers ``HookQueueExecutor``, so its nonisolated code runs on the hook queue, not on
    /// the global concurrent executor's threads. Code isolated to an actor (a `@MainActor` interceptor) still
    /// runs on that actor. Detached, as before the executor: the caller's priority, task-locals and
    /// cancellation don't carry over to an attempt that outlives the call.
    static func runOnHookQueue(_ body: @escaping @Sendable () async -> Void) {
        Task.detached(executorPreference: HookQueueExecutor.shared) { await body() }
    }
}

/// A task executor that runs each job on ``SessionTask/hookQueue``.
final class HookQueueExecutor: TaskExecutor {
    /// The one every interceptor call prefers.
    static let shared = HookQueueExecutor()

    private let queue = SessionTask.hookQueue

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
