import CCurl
import CUV

/// A file descriptor of the library's own (not curl's) watched for reading on an engine's loop: a libuv poll
/// handle, taken from and given back to the engine's ``PollHandles`` so that one descriptor number never has
/// two handles, whoever opened the descriptor. What the reachability monitor reads its netlink socket with.
///
/// Made, started and stopped on the loop thread; `onReadable` runs there, at each loop iteration in which the
/// descriptor has something to read (libuv polls level-triggered: read until it would block).
package final class DescriptorWatch {
    private let engine: Engine
    private let descriptor: Int32
    private var poll: UnsafeMutablePointer<uv_poll_t>?
    fileprivate let onReadable: () -> Void

    /// Starts watching `descriptor`; `nil` when libuv can't poll it. Loop thread only.
    package init?(descriptor: Int32, on engine: Engine, onReadable: @escaping () -> Void) {
        guard let (poll, _) = engine.pollHandles.take(for: curl_socket_t(descriptor), on: engine.uvLoop) else {
            return nil
        }
        self.engine = engine
        self.descriptor = descriptor
        self.poll = poll
        self.onReadable = onReadable
        // Unretained: the owner keeps the watch until `stop()`, which clears the handle's pointer to it.
        poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let started = uv_poll_start(poll, Int32(UV_READABLE.rawValue), descriptorWatchCallback)
        guard started == 0 else {
            engine.pollHandles.stop(poll, socket: curl_socket_t(descriptor))
            self.poll = nil
            return nil
        }
    }

    /// Stops watching; the descriptor may be closed as soon as this returns. Loop thread only.
    package func stop() {
        guard let poll else { return }
        self.poll = nil
        engine.pollHandles.stop(poll, socket: curl_socket_t(descriptor))
    }

    deinit {
        assert(poll == nil, "a descriptor watch released while still watching")
    }
}

/// The poll callback of every ``DescriptorWatch``. libuv (1.44) stops a poll handle whose descriptor reports an
/// error (`POLLERR`: a netlink socket whose buffer overflowed reports `ENOBUFS` so) and calls this once with a
/// negative status: the owner reads anyway, which takes the error and lets it recover (a full re-read), and the
/// handle is started again, or the descriptor would never be watched again.
private func descriptorWatchCallback(_ handle: UnsafeMutablePointer<uv_poll_t>?, _ status: Int32, _ events: Int32) {
    guard let handle, let context = handle.pointee.data else { return }
    Unmanaged<DescriptorWatch>.fromOpaque(context).takeUnretainedValue().onReadable()
    // Still this watch's (`stop()` clears the pointer) and stopped by libuv: watched again.
    if status < 0, handle.pointee.data != nil,
        uv_is_active(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) == 0
    {
        uv_poll_start(handle, Int32(UV_READABLE.rawValue), descriptorWatchCallback)
    }
}

/// A one-shot timer on an engine's loop, for delays of the library's own (the reachability monitor's debounce).
/// Made, started, stopped and closed on the loop thread; `fire` runs there.
package final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private var fire: (() -> Void)?

    /// A stopped timer on `engine`'s loop. Loop thread only.
    package init(on engine: Engine) {
        handle = .allocate(capacity: 1)
        uv_timer_init(engine.uvLoop, handle)
        handle.pointee.data = nil
    }

    /// Calls `fire` once after `milliseconds`, replacing a start not yet fired. Loop thread only.
    package func start(after milliseconds: UInt64, _ fire: @escaping () -> Void) {
        self.fire = fire
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_start(
            handle,
            { timer in
                guard let timer, let context = timer.pointee.data else { return }
                let owner = Unmanaged<LoopTimer>.fromOpaque(context).takeUnretainedValue()
                let fire = owner.fire
                owner.fire = nil
                fire?()
            }, milliseconds, 0)
    }

    /// Whether a start waits to fire.
    var isPending: Bool { fire != nil }

    /// Cancels a start not yet fired. Loop thread only.
    package func stop() {
        fire = nil
        uv_timer_stop(handle)
    }

    /// Stops the timer and frees its handle once libuv is done with it. Loop thread only; the timer can't be
    /// used after.
    package func close() {
        stop()
        handle.pointee.data = nil
        Engine.close(handle)
    }
}
