import Foundation

/// The clock of a transfer's idle timeout: the monotonic clock at the kernel's tick resolution (a few
/// milliseconds), read without a system call.
///
/// curl's callbacks note the time whenever bytes move — at every header line, body chunk and progress
/// tick — so the read must cost next to nothing; `CLOCK_MONOTONIC_COARSE` is the last tick's time, kept in
/// memory the process shares with the kernel. An idle timeout is seconds long, so the tick's resolution
/// changes nothing that can be seen.
enum ActivityClock {
    /// Now, in nanoseconds since an arbitrary start.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// `seconds` in nanoseconds, at least 1 and at most a century.
    static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        UInt64(min(max(seconds, 1e-9), 3.2e9) * 1e9)
    }
}
