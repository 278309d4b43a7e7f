import Glibc

/// Whether a thread that may wait awake for a hand-off (``FollowUpWait``, ``DeliveryLane``) should.
///
/// Waiting awake pays when the hand-off comes within the wait, as it does when a program sends one
/// request at a time to a fast server. When one comes later (a slow server, a program that pauses between
/// requests), the wait only burns a core. So a wait that runs out turns waiting off, and it comes back on
/// only when a hand-off is seen to arrive within the wait's duration of an opportunity declined meanwhile.
/// (Declining more opportunities after each miss in a row was tried: on a noisy machine both sides of a
/// hand-off then backed off together, each making the other's hand-offs slow, and stayed off for whole
/// runs.)
///
/// Used by one thread at a time; the times are ``HandOffClock`` nanoseconds.
struct WaitBackoff {
    /// How long a wait lasts.
    let duration: UInt64
    /// Whether the next opportunity waits.
    private(set) var isWaiting = true
    /// When an opportunity was declined while waiting was off, until the hand-off after it arrives.
    private var declinedAt: UInt64?
    /// Whether an opportunity has been declined since the last miss: waiting comes back only after one.
    private var declinesLeft = 0

    init(duration: UInt64) {
        self.duration = duration
    }

    /// An opportunity to wait at `now`. Returns whether to take it; one declined is remembered, to see how
    /// soon its hand-off comes.
    mutating func shouldWait(at now: UInt64) -> Bool {
        if isWaiting { return true }
        if declinesLeft > 0 { declinesLeft -= 1 }
        declinedAt = now
        return false
    }

    /// A wait ended: `answered` when the hand-off came within it; a wait that ran out turns waiting off.
    mutating func waitEnded(answered: Bool) {
        if !answered {
            isWaiting = false
            declinesLeft = 1
        }
    }

    /// A hand-off arrived at `time`. After a declined opportunity, once the opportunities to decline are
    /// used up, waiting comes back on if it arrived within the wait's duration of it.
    mutating func handOffArrived(at time: UInt64) {
        guard let declined = declinedAt else { return }
        declinedAt = nil
        if declinesLeft == 0, time >= declined, time - declined <= duration { isWaiting = true }
    }
}

/// The clock of the hand-off waits: the monotonic clock, in nanoseconds since an arbitrary start — the clock
/// libuv's loop reads, so the loop thread's waits and the lanes' measure time alike.
enum HandOffClock {
    /// Now.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
