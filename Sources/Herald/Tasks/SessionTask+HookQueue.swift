import Dispatch

// The one place hooks run: the hooks the transport waits for (`taskWillPerformHTTPRedirection`, the
// challenge hooks, `taskNeedNewBodyStream`, `dataTaskDidReceiveResponse`), interceptors' `adapt` and
// `retry`, a retry's delay, a connectivity wait's end, and preparing the next hop's transfer. Never the loop
// thread, where a slow hook would stall every transfer of the engine; never the completion queue, where it
// would wait behind other tasks' handlers and they behind it.
//
// Each task has a hook queue of its own, a serial queue labelled `herald.hooks`, made the first time the
// task needs it: a slow hook holds back its own task only, and a task's hooks run one at a time, in order.
// A serial queue draws its thread from libdispatch's overcommitting pool, which starts another thread when
// every one is busy; a concurrent queue (or a global one) draws from a pool as wide as the machine has
// cores, so on two cores two blocked hooks held back every other task's hooks until libdispatch's monitor
// added a thread, about a second later.
extension SessionTask {
    /// The task's hook queue and the executor that runs Swift concurrency jobs on it, made on first use.
    var hooks: HookQueueExecutor {
        core.withLock { core in
            if let hooks = core.hooks { return hooks }
            let hooks = HookQueueExecutor()
            // A hook that blocks waiting for its session's invalidation would wait for itself: the session
            // knows its hook queues, and such a wait returns at once.
            session.queueMarker.mark(hooks.queue)
            core.hooks = hooks
            return hooks
        }
    }

    /// Where this task's hooks, interceptors and hop decisions run (see ``hooks``).
    var hookQueue: DispatchQueue { hooks.queue }

    /// Runs an interceptor's `adapt` or `retry` (and the rest of `body`) on ``hookQueue``: the Swift
    /// concurrency task prefers the task's ``HookQueueExecutor``, so its nonisolated code runs on the hook
    /// queue, not on the global concurrent executor's threads. Code isolated to an actor (a `@MainActor`
    /// interceptor) still runs on that actor. Detached, as before the executor: the caller's priority,
    /// task-locals and cancellation don't carry over to an attempt that outlives the call.
    func runOnHookQueue(_ body: @escaping @Sendable () async -> Void) {
        Task.detached(executorPreference: hooks) { await body() }
    }
}

/// A task's hook queue, and a task executor that runs each Swift concurrency job on it.
final class HookQueueExecutor: TaskExecutor {
    /// The queue: serial, labelled `herald.hooks` (the label tools and tests identify it by).
    let queue = DispatchQueue(label: "herald.hooks", qos: .userInitiated)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
