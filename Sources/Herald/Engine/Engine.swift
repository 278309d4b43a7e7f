import CCurl
import CUV
import Foundation

/// A libuv loop on its own thread: the only thread that ever calls libuv or libcurl.
///
/// Other threads hand it work through ``execute(_:)``: the closure is appended to a lock-guarded
/// queue and the loop is woken with `uv_async_send`. libuv coalesces sends, so the async callback
/// drains the whole queue each time. An idle engine sleeps in `epoll_wait`: no timers, no polling.
final class Engine: @unchecked Sendable {
    // Safety: `loop`, `wakeup` and every libuv/libcurl object reachable from them are touched only on
    // `loopThread` (inside `uv_run`); `pending` is guarded by its lock; `loopThreadID` is written once,
    // before any command can run.

    /// The engine sessions share unless they are given their own.
    static let shared = Engine(name: "herald.engine.shared")

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    private let pending = Locked<[@Sendable () -> Void]>([])
    private let loopThreadID = Locked<pthread_t?>(nil)

    init(name: String) {
        // curl_global_init is reference-counted and thread-safe on this build (feature `threadsafe`).
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        loop = .allocate(capacity: 1)
        uv_loop_init(loop)
        wakeup = .allocate(capacity: 1)
        uv_async_init(loop, wakeup) { handle in
            guard let handle, let context = handle.pointee.data else { return }
            Unmanaged<Engine>.fromOpaque(context).takeUnretainedValue().drain()
        }
        // The engine lives as long as its thread runs; sessions keep it alive in the meantime.
        wakeup.pointee.data = Unmanaged.passRetained(self).toOpaque()
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
        pending.withLock { $0.append(work) }
        uv_async_send(wakeup)
    }

    /// Whether the caller is on the loop thread.
    var isOnLoopThread: Bool {
        guard let id = loopThreadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    /// The loop, for handles created on the loop thread.
    var uvLoop: UnsafeMutablePointer<uv_loop_t> { loop }

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
