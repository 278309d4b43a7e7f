import CCurl
import CUV
import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
    private let closeDescriptor = Glibc.close
#elseif canImport(Musl)
    import Musl
    private let closeDescriptor = Musl.close
#endif

/// A libuv loop on its own thread: the only thread that calls libuv, or libcurl on a multi handle and the
/// easy handles in it (an easy handle not yet added is configured by the thread that prepares its transfer).
///
/// Other threads hand it work through ``execute(_:)``: the closure is appended to a lock-guarded
/// queue and, when the queue was empty, the loop is woken through an eventfd of its own (``Wakeup``);
/// the loop drains the whole queue each time. An idle engine sleeps in `epoll_wait`: no timers, no polling.
final class Engine: @unchecked Sendable {
    // Safety: `loop`, `wakeup` and every libuv/libcurl object reachable from them are touched only on
    // `loopThread` (inside `uv_run`); `pending` is guarded by its lock; `loopThreadID` is written once,
    // before any command can run.

    /// The engine sessions share unless they are given their own.
    static let shared = Engine(name: "herald.engine.shared")

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: Wakeup
    private let pending = Locked<[@Sendable () -> Void]>([])
    private let loopThreadID = Locked<pthread_t?>(nil)
    /// Runs after each loop iteration's I/O to hand that iteration's deliveries to their queues.
    private let iterationEnd: UnsafeMutablePointer<uv_check_t>
    /// Keeps the loop from blocking in `epoll_wait` while deliveries wait for the iteration's end (they
    /// may be queued from a timer, before the poll phase).
    private let deliveriesWaiting: UnsafeMutablePointer<uv_idle_t>
    /// This iteration's deliveries, by queue, in order. Loop thread only, so without Swift's run-time
    /// exclusivity check (see `Transfer`).
    @exclusivity(unchecked) private var deliveries: [Delivery] = []

    private struct Delivery {
        let queue: DispatchQueue
        let group: DispatchGroup?
        var work: [@Sendable () -> Void]
    }

    init(name: String) {
        // curl_global_init is reference-counted and thread-safe on this build (feature `threadsafe`).
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        loop = .allocate(capacity: 1)
        uv_loop_init(loop)
        iterationEnd = .allocate(capacity: 1)
        uv_check_init(loop, iterationEnd)
        deliveriesWaiting = .allocate(capacity: 1)
        uv_idle_init(loop, deliveriesWaiting)
        wakeup = Wakeup(loop: loop)
        // The engine lives as long as its thread runs; sessions keep it alive in the meantime.
        let context = Unmanaged.passRetained(self).toOpaque()
        wakeup.start(context: context)
        iterationEnd.pointee.data = context
        let thread = Thread { [self] in
            loopThreadID.withLock { $0 = pthread_self() }
            uv_run(loop, UV_RUN_DEFAULT)
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `work` on the loop thread, after every command enqueued before it.
    func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = pending.withLock { queue in
            defer { queue.append(work) }
            return queue.isEmpty
        }
        // A non-empty queue has a wake-up on its way already: the loop empties the queue only after it
        // was woken, and drains until it finds it empty.
        if wasEmpty { wakeup.signal() }
    }

    /// Runs `work` on `queue` (in `group`): from the loop thread, at the end of the current loop
    /// iteration, batched with the iteration's other work for the same queue into one dispatch — a burst
    /// of transfers finishing together costs one thread wake-up, not one each; from any other thread, at
    /// once. Work for one queue runs in the order it was submitted, and after anything the loop thread
    /// dispatched to that queue directly before submitting it.
    func deliver(on queue: DispatchQueue, group: DispatchGroup?, _ work: @escaping @Sendable () -> Void) {
        guard isOnLoopThread else {
            queue.async(group: group, execute: work)
            return
        }
        if deliveries.isEmpty {
            uv_check_start(iterationEnd) { handle in
                guard let handle, let context = handle.pointee.data else { return }
                Unmanaged<Engine>.fromOpaque(context).takeUnretainedValue().flushDeliveries()
            }
            uv_idle_start(deliveriesWaiting) { _ in }
        }
        if let index = deliveries.firstIndex(where: { $0.queue === queue && $0.group === group }) {
            deliveries[index].work.append(work)
        } else {
            deliveries.append(Delivery(queue: queue, group: group, work: [work]))
        }
    }

    private func flushDeliveries() {
        uv_check_stop(iterationEnd)
        uv_idle_stop(deliveriesWaiting)
        let batches = deliveries
        deliveries.removeAll(keepingCapacity: true)
        for batch in batches {
            let work = batch.work
            batch.queue.async(group: batch.group) {
                for item in work { item() }
            }
        }
    }

    /// Whether the caller is on the loop thread.
    var isOnLoopThread: Bool {
        guard let id = loopThreadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    /// The loop, for handles created on the loop thread.
    var uvLoop: UnsafeMutablePointer<uv_loop_t> { loop }

    /// The wake-up fired: runs every queued command. Loop thread.
    fileprivate static func wakeupFired(_ context: UnsafeMutableRawPointer) {
        Unmanaged<Engine>.fromOpaque(context)._withUnsafeGuaranteedRef { engine in
            engine.wakeup.clear()
            engine.drain()
        }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { queue -> [@Sendable () -> Void] in
                let batch = queue
                queue.removeAll(keepingCapacity: true)
                return batch
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }
}

extension Engine {
    /// How other threads wake the loop: an eventfd of the engine's own that the loop polls, or libuv's
    /// `uv_async_t` if the process can't make one (it is out of descriptors when the engine starts).
    ///
    /// `uv_async_t` alone would do, but in libuv 1.44 a loop woken while the sending thread is still on
    /// its way out of `write(2)` spins (997 `pause` instructions, then `sched_yield`, over and over) until
    /// the sender marks its send done. With one request at a time that happened on about a third of the
    /// requests, each time for tens of microseconds. Here the `write` is the whole send: the loop reads
    /// the counter and runs the commands, with nothing to wait for. ``Engine/execute(_:)`` signals only when
    /// its queue was empty, so a burst of commands costs one `write`.
    final class Wakeup: @unchecked Sendable {
        // Safety: every stored property is written once, in `init`. `signal()` only writes to the
        // descriptor (or calls `uv_async_send`, which libuv allows from any thread); `start` runs before
        // the loop thread does, and `clear` on the loop thread.

        /// The eventfd, or -1 when the `uv_async_t` stands in.
        private let descriptor: Int32
        private let poll: UnsafeMutablePointer<uv_poll_t>?
        private let async: UnsafeMutablePointer<uv_async_t>?

        init(loop: UnsafeMutablePointer<uv_loop_t>) {
            let descriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            if descriptor >= 0 {
                let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
                if uv_poll_init(loop, poll, descriptor) == 0 {
                    self.descriptor = descriptor
                    self.poll = poll
                    self.async = nil
                    return
                }
                poll.deallocate()
                _ = closeDescriptor(descriptor)
            }
            let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
            uv_async_init(loop, async) { handle in
                guard let handle, let context = handle.pointee.data else { return }
                Engine.wakeupFired(context)
            }
            self.descriptor = -1
            self.poll = nil
            self.async = async
        }

        /// Starts watching, with `context` (the engine) handed to ``Engine/wakeupFired(_:)``. Before the loop
        /// thread runs.
        func start(context: UnsafeMutableRawPointer) {
            if let poll {
                poll.pointee.data = context
                uv_poll_start(poll, Int32(UV_READABLE.rawValue)) { handle, _, _ in
                    // An error on an eventfd can't happen; draining the queue is right either way.
                    guard let handle, let context = handle.pointee.data else { return }
                    Engine.wakeupFired(context)
                }
            } else if let async {
                async.pointee.data = context
            }
        }

        /// Wakes the loop. Any thread.
        func signal() {
            guard descriptor >= 0, async == nil else {
                if let async { uv_async_send(async) }
                return
            }
            var one: UInt64 = 1
            // EAGAIN means the counter is full: the descriptor is readable already.
            while write(descriptor, &one, 8) < 0, errno == EINTR {}
        }

        /// Resets the counter, before the queue is drained: a signal after this makes the descriptor
        /// readable again. Loop thread.
        func clear() {
            guard descriptor >= 0 else { return }
            var count: UInt64 = 0
            while read(descriptor, &count, 8) < 0, errno == EINTR {}
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
