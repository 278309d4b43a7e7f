import CUV

// The idle timeout: one libuv timer per multi handle (`idleTimer`), due when the first running transfer's
// timeout is. Loop thread only.
extension MultiHandle {
    /// Fails every running transfer no byte moved for within its idle timeout, with `timedOut`, and sets the
    /// timer for the next transfer that may go idle. Loop thread only, outside curl callbacks.
    ///
    /// One timer for the pool rather than a check in curl's progress callback: the callback ran about ten
    /// times per request to find nothing, and curl's low-speed check, set only to wake the callback on a
    /// silent connection, updated curl's timers at every read. The timer fires when the first transfer's
    /// timeout is due, and the check walks the pool's transfers only then.
    ///
    /// A transfer waiting for a connection is not idle while another transfer of the pool has one: it waits for
    /// a slot (the per-host or total connection limit) or for a stream. While none has (every transfer waiting,
    /// or connecting), its clock runs from when it joined or when a transfer that had a connection last left,
    /// whichever is later: libcurl starts the waiting transfers of a destination whose connection failed one at a
    /// time, each with a connect timeout of its own (and so do transfers waiting to multiplex over a connection
    /// still being made), and 64 requests to a server that never answers would otherwise fail one connect
    /// timeout after another.
    func checkIdleTransfers() {
        idleCheckDue = nil
        let now = ActivityClock.now
        var idle: [Transfer] = []
        var unconnected: [Transfer] = []
        var timedOut: [Transfer] = []
        var next: UInt64?
        // A transfer that can't tell whether it has one (libcurl reports none for it) is taken as having one.
        let anyConnected = transfers.contains { !$0.isParked && ($0.hasConnection || !$0.reportsConnection) }
        for transfer in transfers {
            if transfer.isParked, let resourceTimeout = transfer.resourceTimeout {
                // Out of curl (MultiHandle.park), whose own timeout can't end it.
                let due = transfer.firstAddedAt &+ resourceTimeout
                if now >= due {
                    timedOut.append(transfer)
                    continue
                }
                next = min(next ?? due, due)
            }
            guard let idleTimeout = transfer.idleTimeout else { continue }
            // Held by the user or its task, or waiting for a connection (`maximumConnectionsPerHost`; connecting
            // has a timeout of its own), a transfer isn't idle: look at it again a timeout from now.
            var due = now &+ idleTimeout
            if transfer.machine.isIdleTimeoutRunning, !transfer.waitsForConnection {
                // The clock is monotonic, and the transfer's last activity was read from it on this thread.
                let last = min(transfer.lastActivity, now)
                if now - last > idleTimeout {
                    idle.append(transfer)
                    continue
                }
                due = last &+ idleTimeout &+ 1
            } else if transfer.machine.isIdleTimeoutRunning, !transfer.isParked, !anyConnected {
                let last = max(min(transfer.lastActivity, now), min(lastConnectedTransferLeft, now))
                if now - last > idleTimeout {
                    unconnected.append(transfer)
                    continue
                }
                due = last &+ idleTimeout &+ 1
            }
            next = min(next ?? due, due)
        }
        for transfer in idle {
            remove(transfer, error: transfer.idleTimeoutError)
        }
        for transfer in unconnected {
            remove(transfer, error: transfer.connectionTimeoutError)
        }
        for transfer in timedOut {
            remove(transfer, error: transfer.resourceTimeoutError)
        }
        if let next { scheduleIdleCheck(at: next) }
    }

    /// Makes the idle check run at `due` (on ``ActivityClock``) at the latest.
    func scheduleIdleCheck(at due: UInt64) {
        guard !isClosed else { return }
        if let scheduled = idleCheckDue, scheduled <= due { return }
        idleCheckDue = due
        let now = ActivityClock.now
        // Rounded up: libuv counts whole milliseconds, and a check that comes early only sets the timer again.
        let milliseconds = due > now ? (due - now + 999_999) / 1_000_000 : 0
        uv_timer_start(
            idleTimer,
            { timer in
                guard let timer, let context = timer.pointee.data else { return }
                Unmanaged<MultiHandle>.fromOpaque(context).takeUnretainedValue().checkIdleTransfers()
            }, milliseconds, 0)
    }
}
