import CCurl
import CUV

/// An engine's libuv poll handles, at most one per socket number, kept when curl stops watching a socket.
///
/// curl reports `CURL_POLL_REMOVE` for a kept-alive connection each time a transfer leaves it, and asks for the
/// same socket again when the next transfer on that connection starts: at 64 concurrent transfers that is
/// nearly every request. Opening a handle costs libuv three system calls (an `epoll_ctl` add and delete to
/// check the socket, and making it non-blocking) and closing one another `epoll_ctl`; a stopped handle is
/// started again for the socket's next use instead.
///
/// `uv_poll_stop` takes the socket out of epoll at once, so curl may close it right after, as it does when a
/// connection ends. A later socket with the same number starts the same handle: libuv keeps a watcher per
/// number, not per socket, and a handle holds nothing else about its socket. Every multi handle on the loop
/// takes its handles from here, so one number never has two handles: stopping or closing either would take
/// the number out of epoll under the other. The handles are kept for the engine's life: one at most for each
/// socket number curl has used, and a table as long as the highest. Loop thread only.
struct PollHandles: ~Copyable {
    /// Stopped handles by socket number.
    private var stopped = PollHandleTable()

    /// The number of stopped handles kept.
    var stoppedCount: Int { stopped.count }

    /// A handle for `socket`, stopped: the one kept for its number, or a new one opened on `loop` (`opened`);
    /// `nil` if libuv can't poll the socket.
    mutating func take(for socket: curl_socket_t, on loop: UnsafeMutablePointer<uv_loop_t>)
        -> (handle: UnsafeMutablePointer<uv_poll_t>, opened: Bool)?
    {
        guard socket >= 0 else { return nil }
        if let poll = stopped.remove(socket) { return (poll, false) }
        let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        guard uv_poll_init_socket(loop, poll, socket) == 0 else {
            poll.deallocate()
            return nil
        }
        return (poll, true)
    }

    /// Stops `poll`, which watches `socket`, and keeps it for the number's next socket. The socket may be
    /// closed as soon as this returns.
    mutating func stop(_ poll: UnsafeMutablePointer<uv_poll_t>, socket: curl_socket_t) {
        uv_poll_stop(poll)
        poll.pointee.data = nil
        if let previous = stopped.insert(poll, for: socket) {
            // Not reached while every handle comes from `take` (one already kept for the number, or a
            // negative number); closing the extra one keeps the count right.
            Engine.close(previous)
        }
    }
}

/// Poll handles by socket number, at most one for each: an array as long as the highest number, where a
/// dictionary would hash the number at every lookup (curl asks for a connection's socket at every
/// transfer). Kept by ``PollHandles`` for its stopped handles and by each multi handle for the ones it
/// polls with. Loop thread only.
struct PollHandleTable {
    private var slots: [UnsafeMutablePointer<uv_poll_t>?] = []
    /// The number of handles held.
    private(set) var count = 0

    /// The handle held for `socket`, if any.
    subscript(socket: curl_socket_t) -> UnsafeMutablePointer<uv_poll_t>? {
        let index = Int(socket)
        return index >= 0 && index < slots.count ? slots[index] : nil
    }

    /// Holds `poll` for `socket` and returns the handle it replaces; for a negative number, which no socket
    /// has, holds nothing and returns `poll` itself, for the caller to close.
    mutating func insert(_ poll: UnsafeMutablePointer<uv_poll_t>, for socket: curl_socket_t)
        -> UnsafeMutablePointer<uv_poll_t>?
    {
        let index = Int(socket)
        guard index >= 0 else { return poll }
        if index >= slots.count { slots.append(contentsOf: repeatElement(nil, count: index + 1 - slots.count)) }
        let previous = slots[index]
        slots[index] = poll
        if previous == nil { count += 1 }
        return previous
    }

    /// Lets go of the handle held for `socket` and returns it, if there is one.
    mutating func remove(_ socket: curl_socket_t) -> UnsafeMutablePointer<uv_poll_t>? {
        guard let poll = self[socket] else { return nil }
        slots[Int(socket)] = nil
        count -= 1
        return poll
    }

    /// Lets go of every handle, and returns them with their sockets.
    mutating func removeAll() -> [(socket: curl_socket_t, poll: UnsafeMutablePointer<uv_poll_t>)] {
        let held = slots.enumerated().compactMap { index, poll in poll.map { (curl_socket_t(index), $0) } }
        slots.removeAll()
        count = 0
        return held
    }
}
