/// When an engine's loop thread stays awake for a follow-up request instead of going to sleep.
///
/// A program that sends one request at a time starts the next from the completion handler of the last, on
/// the completion queue's thread, a few tens of microseconds after the loop thread handed the finished
/// transfer over. By then the loop thread would be asleep in `epoll_wait`, and the start would have to wake
/// it: a context switch on each side, the costliest step of a request loopback answers in about 30 µs.
///
/// So when the engine's only running transfer has just been handed over, and nothing else runs, the loop
/// keeps turning with a zero poll timeout for up to ``duration``. The wait ends as soon as a command starts
/// a transfer, or at the deadline, after which the loop sleeps as before. Nothing else starts it: with other
/// transfers running the loop has I/O to wait for, and after a burst finishes together the completion
/// queue has a batch of handlers to run first, so there polling would only take a core from them (and, on a
/// small machine, from the server). A wait that runs out turns waiting off until a follow-up is seen to
/// come within ``duration`` again (``WaitBackoff``): a program that pauses between requests, or a slow
/// server, costs one wait, not one per request.
///
/// Loop thread only; the times are `uv_hrtime()` nanoseconds.
struct FollowUpWait {
    /// How long the loop waits without sleeping: enough for a completion queue's thread to wake and run a
    /// handler that starts the next request, short enough that an idle program pays for it once. On a
    /// virtual machine that wake-up can take more than 100 µs: waits that short ran out, turned waiting off
    /// and kept it off, since every hand-off then took a wake-up.
    static let duration: UInt64 = 300_000

    /// The transfers in this engine's pools now.
    private(set) var transfersRunning = 0
    /// The transfers that left a pool since the last hand-over.
    private var transfersEnded = 0
    /// When the current wait ends; `nil` when the loop isn't waiting.
    private(set) var deadline: UInt64?
    /// Whether waiting pays now.
    private(set) var backoff = WaitBackoff(duration: FollowUpWait.duration)
    /// How many waits started, and how many of them ended because a transfer started: for tests and
    /// measurement.
    private(set) var waitsStarted = 0
    private(set) var waitsAnswered = 0

    /// Whether the loop is waiting for a follow-up now.
    var isWaiting: Bool { deadline != nil }

    /// A transfer entered a pool.
    mutating func transferStarted() { transfersRunning += 1 }

    /// A transfer left a pool, finished or stopped.
    mutating func transferEnded() {
        transfersRunning -= 1
        transfersEnded += 1
    }

    /// The iteration's deliveries went to their queues at `now`. Returns whether a wait starts: only when the
    /// one transfer that ended since the last hand-over was the last one running, and waiting pays.
    mutating func handedOver(at now: UInt64) -> Bool {
        defer { transfersEnded = 0 }
        guard transfersRunning == 0, transfersEnded == 1, deadline == nil, backoff.shouldWait(at: now) else {
            return false
        }
        deadline = now + Self.duration
        waitsStarted += 1
        return true
    }

    /// Commands ran at `now`. Returns whether the wait ends: a transfer is running again, so the loop has
    /// its I/O to wait for. A command that starts none (a cancellation, a closure) leaves the wait to its
    /// deadline.
    mutating func commandsRan(at now: UInt64) -> Bool {
        guard transfersRunning > 0 else { return false }
        backoff.handOffArrived(at: now)
        guard deadline != nil else { return false }
        deadline = nil
        waitsAnswered += 1
        backoff.waitEnded(answered: true)
        return true
    }

    /// A turn of the loop while waiting, at `now`. Returns whether the wait ends because its time is up.
    mutating func turned(at now: UInt64) -> Bool {
        guard let deadline, now >= deadline else { return false }
        self.deadline = nil
        backoff.waitEnded(answered: false)
        return true
    }
}
