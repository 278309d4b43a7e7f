import CUV

/// When a multi handle wants `curl_multi_socket_action` called for its timeout: what libcurl's timer callback
/// asks for, on the engine's loop.
///
/// A positive delay is a `uv_timer_t`. "At once" (0 ms) is a `uv_idle_t` instead, which runs its callback once
/// in the loop's next pass, after the loop has polled its descriptors: libuv before 1.48 runs a timer started
/// with 0 ms from inside a timer callback again in the same pass, before any I/O, so a libcurl that asked for
/// 0 ms from each timeout would hold the loop in its timers for good: no socket read, no command taken (libuv's
/// advice for "as soon as possible" is an idle handle). Loop thread only, from ``start(on:fire:)`` on.
final class CurlTimeout: @unchecked Sendable {
    // Safety: used on the engine's loop thread only, after `init` (which may run on any thread and touches
    // nothing libuv sees).
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private let soon: UnsafeMutablePointer<uv_idle_t>
    private var fire: () -> Void = {}

    /// Allocates the handles; ``start(on:fire:)`` initialises them on the loop.
    init() {
        self.timer = .allocate(capacity: 1)
        self.soon = .allocate(capacity: 1)
    }

    /// Initialises the handles on `loop`, to call `fire` when the timeout comes: on the loop thread, from the
    /// timer's or the idle handle's callback, where libcurl is told of it. Loop thread only; before any
    /// ``schedule(_:)``.
    func start(on loop: UnsafeMutablePointer<uv_loop_t>, fire: @escaping () -> Void) {
        self.fire = fire
        let context = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_init(loop, timer)
        timer.pointee.data = context
        uv_idle_init(loop, soon)
        soon.pointee.data = context
    }

    /// Replaces the timeout with one `milliseconds` from now: 0 is the loop's next pass, a negative number
    /// none at all (libcurl's meanings).
    func schedule(_ milliseconds: Int) {
        if milliseconds < 0 {
            uv_timer_stop(timer)
            uv_idle_stop(soon)
        } else if milliseconds == 0 {
            uv_timer_stop(timer)
            uv_idle_start(soon) { soon in
                guard let soon, let context = soon.pointee.data else { return }
                uv_idle_stop(soon)
                Unmanaged<CurlTimeout>.fromOpaque(context).takeUnretainedValue().fire()
            }
        } else {
            uv_idle_stop(soon)
            uv_timer_start(
                timer,
                { timer in
                    guard let timer, let context = timer.pointee.data else { return }
                    Unmanaged<CurlTimeout>.fromOpaque(context).takeUnretainedValue().fire()
                }, UInt64(milliseconds), 0)
        }
    }

    /// Stops and closes both handles; their memory is freed once libuv has let them go. Loop thread only,
    /// after ``start(on:fire:)``.
    func close() {
        uv_timer_stop(timer)
        uv_idle_stop(soon)
        Engine.close(timer)
        Engine.close(soon)
    }
}
