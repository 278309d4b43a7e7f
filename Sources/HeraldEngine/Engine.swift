import CCurl
import CUV
import Foundation
import HeraldNotifications

/// A libuv loop on its own thread: the only thread that calls libuv, or libcurl on a multi handle and the
/// easy handles in it (an easy handle not yet added is configured by the thread that prepares its transfer).
///
/// Other threads hand it work through ``execute(_:)`` (a closure) or ``execute(_:on:)`` (a transfer
/// command): it is appended to a lock-guarded queue, and the first command after a drain wakes the loop
/// through an eventfd the loop watches (``Wakeup``); the loop drains the whole queue each time. An idle
/// engine sleeps in `epoll_wait`: no timers, no polling, no spinning.
///
/// What follows a finished transfer (its delegate's ``TransferDelegate/proceed(after:)``) runs here too, on
/// the loop thread, for every transfer: it is library code only, and the delegate hands whatever user code
/// comes next to queues of its own, at once or at the loop iteration's end (``atIterationEnd(_:)``). The
/// engine names no session or task type for it.
package final class Engine: @unchecked Sendable {
    // Safety: `loop` and every libuv/libcurl object reachable from it are touched only on the loop thread
    // (inside `uv_run`); `pending` is guarded by its lock; `wakeup` signals from any thread through a
    // system call on its descriptor only; `loopThreadID` is written once, before any command can run.

    /// The engine sessions share unless they are given their own.
    package static let shared = Engine(name: "herald.engine.shared")

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: Wakeup
    private let pending = Locked(PendingWork())
    private let loopThreadID = Locked<pthread_t?>(nil)
    /// The storage of the last batch of commands drained, emptied and kept for the next, so that taking a
    /// batch off `pending` allocates nothing: the two arrays trade buffers. Loop thread only.
    @exclusivity(unchecked) private var drained: [Work] = []
    /// The poll handles of every multi handle on this loop, kept across the transfers on a connection.
    /// Loop thread only.
    @exclusivity(unchecked) var pollHandles = PollHandles()
    /// Work to run once the current loop iteration's I/O is done (``atIterationEnd(_:)``). Loop thread only.
    @exclusivity(unchecked) private var iterationEndWork: [() -> Void] = []
    /// Runs ``iterationEndWork`` after the iteration's poll phase.
    private let iterationEnd: UnsafeMutablePointer<uv_check_t>
    /// Keeps the poll phase from blocking in `epoll_wait` while work waits for the iteration's end (it may
    /// have been queued from a timer, before the poll phase).
    private let iterationEndPending: UnsafeMutablePointer<uv_idle_t>
    /// The common response fields' last values, shared by every transfer on this loop. Loop thread only.
    let recentFieldValues = RecentFieldValues()

    /// What other threads hand the loop thread: a closure, or a transfer command for a multi handle. A
    /// command is kept as a value, so the one every task start sends allocates nothing (a closure capturing
    /// it did, on the sending thread, and the loop thread freed it into that thread's arena).
    private enum Work {
        case closure(@Sendable () -> Void)
        case command(TransferCommand, MultiHandle)
    }

    /// The work other threads have handed the loop, and whether the loop has been woken for it since it last
    /// took the queue: only the first command after a drain pays the system call that wakes the loop.
    private struct PendingWork {
        var work: [Work] = []
        var isWakeRequested = false
    }

    init(name: String) {
        // curl_global_init is reference-counted and thread-safe on this build (feature `threadsafe`).
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        loop = .allocate(capacity: 1)
        uv_loop_init(loop)
        wakeup = Wakeup(loop: loop)
        iterationEnd = .allocate(capacity: 1)
        uv_check_init(loop, iterationEnd)
        iterationEndPending = .allocate(capacity: 1)
        uv_idle_init(loop, iterationEndPending)
        // The engine lives as long as its thread runs; sessions keep it alive in the meantime.
        let context = Unmanaged.passRetained(self).toOpaque()
        iterationEnd.pointee.data = context
        wakeup.start(context: context)
        let thread = Thread { [self] in
            loopThreadID.withLock { $0 = pthread_self() }
            uv_run(loop, UV_RUN_DEFAULT)
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `work` on the loop thread, after every command enqueued before it.
    package func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(.closure(work))
    }

    /// Carries out `command` on `multi` on the loop thread, after every command enqueued before it.
    package func execute(_ command: TransferCommand, on multi: MultiHandle) {
        enqueue(.command(command, multi))
    }

    private func enqueue(_ work: Work) {
        let wakes = pending.withLock { pending -> Bool in
            pending.work.append(work)
            guard !pending.isWakeRequested else { return false }
            pending.isWakeRequested = true
            return true
        }
        if wakes { wakeup.signal() }
    }

    /// Runs `work` on the loop thread at the end of the current loop iteration, after its I/O: what a caller
    /// collects from the iteration's finished transfers (completed tasks, say) it can hand on once, in one
    /// dispatch, instead of one per transfer. Loop thread only.
    package func atIterationEnd(_ work: @escaping () -> Void) {
        if iterationEndWork.isEmpty {
            uv_check_start(iterationEnd) { handle in
                guard let handle, let context = handle.pointee.data else { return }
                Unmanaged<Engine>.fromOpaque(context).takeUnretainedValue().runIterationEnd()
            }
            uv_idle_start(iterationEndPending) { _ in }
        }
        iterationEndWork.append(work)
    }

    private func runIterationEnd() {
        uv_check_stop(iterationEnd)
        uv_idle_stop(iterationEndPending)
        // Taken whole: work queued while it runs waits for the next iteration's end.
        var work: [() -> Void] = []
        swap(&work, &iterationEndWork)
        for item in work { item() }
    }

    /// Whether the caller is on the loop thread.
    package var isOnLoopThread: Bool {
        guard let id = loopThreadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    /// The loop, for handles created on the loop thread.
    var uvLoop: UnsafeMutablePointer<uv_loop_t> { loop }

    private func drain() {
        wakeup.clear()
        while true {
            // `pending` gets the kept (empty) buffer and the commands come out in theirs: no allocation.
            var batch: [Work] = []
            swap(&batch, &drained)
            // A command enqueued after this takes the queue wakes the loop again: the drain may have ended by
            // the time it arrives.
            pending.withLock { pending in
                swap(&pending.work, &batch)
                pending.isWakeRequested = false
            }
            let isEmpty = batch.isEmpty
            for work in batch {
                switch work {
                case .closure(let closure): closure()
                case .command(let command, let multi): multi.perform(command)
                }
            }
            batch.removeAll(keepingCapacity: true)
            drained = batch
            if isEmpty {
                LoopThreadFrees.shared.drain(keeping: LoopThreadFrees.keptForReuse)
                return
            }
        }
    }
}

extension Engine {
    /// How other threads wake the loop thread: an eventfd the loop watches with a poll handle.
    ///
    /// Not libuv's `uv_async_t`: in libuv 1.44 its sender marks the handle busy, writes the loop's eventfd
    /// and only then marks it done, and the loop thread it woke spins (997 compare-and-swaps, then
    /// `sched_yield`, again and again) until the sender has come back from that write. One request at a time
    /// on two cores that spin was about 6% of the process's CPU. Here the loop reads the eventfd and drains:
    /// nothing to wait for. Where the kernel refuses an eventfd (the process is out of descriptors), the
    /// engine falls back to the async handle rather than never waking.
    fileprivate struct Wakeup: @unchecked Sendable {
        // Safety: the handles are initialized and started before the loop thread runs, and touched after
        // that only by libuv on the loop thread; other threads call `signal()`, which reads the immutable
        // descriptor and makes a system call, or, in the fallback, `uv_async_send`, which libuv allows from
        // any thread.
        private let descriptor: Int32
        private let poll: UnsafeMutablePointer<uv_poll_t>?
        private let async: UnsafeMutablePointer<uv_async_t>?

        init(loop: UnsafeMutablePointer<uv_loop_t>) {
            let descriptor = herald_wakeup_open()
            if descriptor >= 0 {
                let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
                if uv_poll_init(loop, poll, descriptor) == 0 {
                    self.descriptor = descriptor
                    self.poll = poll
                    self.async = nil
                    return
                }
                poll.deallocate()
                _ = Glibc.close(descriptor)
            }
            self.descriptor = -1
            self.poll = nil
            let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
            uv_async_init(loop, async) { handle in
                guard let handle, let context = handle.pointee.data else { return }
                Unmanaged<Engine>.fromOpaque(context).takeUnretainedValue().drain()
            }
            self.async = async
        }

        /// Makes a signal run the engine at `context`'s drain on the loop thread. Before the loop runs.
        func start(context: UnsafeMutableRawPointer) {
            if let poll {
                poll.pointee.data = context
                uv_poll_start(poll, Int32(UV_READABLE.rawValue)) { handle, _, _ in
                    guard let handle, let context = handle.pointee.data else { return }
                    Unmanaged<Engine>.fromOpaque(context).takeUnretainedValue().drain()
                }
            } else {
                async?.pointee.data = context
            }
        }

        /// Wakes the loop thread, which then drains. Any thread.
        func signal() {
            if let async {
                uv_async_send(async)
            } else {
                // The only failure left is a broken descriptor, which the engine never closes while it runs.
                _ = herald_wakeup_signal(descriptor)
            }
        }

        /// Makes the descriptor unreadable until the next signal. Loop thread, before draining.
        func clear() {
            if poll != nil { herald_wakeup_clear(descriptor) }
        }
    }

    /// Closes a libuv handle and frees its memory once libuv is done with it.
    ///
    /// The memory must stay valid until the close callback runs, so it is freed there, never before.
    static func close<Handle>(_ handle: UnsafeMutablePointer<Handle>) {
        let raw = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        uv_close(raw) { closed in
            guard let closed else { return }
            UnsafeMutableRawPointer(closed).deallocate()
        }
    }
}
