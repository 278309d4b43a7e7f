#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import HeraldNotifications
import Herald

/// Hands items to a consumer on a thread of its own, one at a time and in submission order, so that a
/// sink's I/O never runs on the thread that posts notifications.
///
/// The thread blocks `SIGPIPE`: a write to a pipe whose reader has gone (`| head -1`) fails with `EPIPE`
/// instead of killing the process, and the consumer reports the sink ended. Nothing else in the process
/// changes: other threads keep the signal disposition the program chose.
///
/// Items submitted before the writer is released are still consumed; the thread exits after the last.
///
/// At most `capacity` items wait: when the consumer doesn't keep up (a pipe whose reader stopped reading
/// without closing it, a log backend stuck on its disk), later items are dropped and counted
/// (``droppedCount``) instead of growing the process's memory without end.
final class SinkWriter<Item: Sendable>: Sendable {
    private let core: Core

    /// Starts the writer's thread.
    ///
    /// - Parameters:
    ///   - name: The thread's name, for debuggers.
    ///   - capacity: The most items that wait for the consumer; default ``SinkCapacity/default``.
    ///   - consumer: Consumes one item; returns `false` once the sink has ended (its output closed), after
    ///     which later items are dropped.
    init(name: String, capacity: Int = SinkCapacity.default, consumer: @escaping @Sendable (Item) -> Bool) {
        let core = Core(capacity: max(1, capacity), consumer: consumer)
        self.core = core
        let thread = Thread { core.run() }
        thread.name = name
        thread.start()
    }

    deinit {
        core.close()
    }

    /// Queues `item` for the consumer and returns at once.
    func submit(_ item: Item) {
        core.submit(item)
    }

    /// Returns once every item submitted before the call has been consumed (or dropped, the sink having
    /// ended).
    func flush() async {
        await withCheckedContinuation { continuation in
            core.whenConsumed { continuation.resume() }
        }
    }

    /// Whether the sink ended: its output was closed, and items are now dropped.
    var hasEnded: Bool { core.hasEnded }

    /// How many items were dropped because `capacity` items were already waiting.
    var droppedCount: Int { core.droppedCount }

    /// The queue and the thread's loop, shared by the writer and its thread.
    private final class Core: Sendable {
        private struct State {
            var items: [Item] = []
            var submitted: UInt64 = 0
            var consumed: UInt64 = 0
            var waiters: [(count: UInt64, resume: @Sendable () -> Void)] = []
            var isClosing = false
            var hasEnded = false
            var dropped = 0
            /// Whether the thread waits on `wake` (or is about to): only then does a submit signal it. A
            /// signal per item would cost a futex call each, and wake the thread once per item for a
            /// batch it had already taken.
            var isWaiting = false

            /// Marks the thread awake and returns whether it was waiting, so the caller signals it.
            mutating func wakeIfWaiting() -> Bool {
                defer { isWaiting = false }
                return isWaiting
            }
        }

        private let state = Locked(State())
        private let wake = DispatchSemaphore(value: 0)
        private let consumer: @Sendable (Item) -> Bool
        private let capacity: Int

        init(capacity: Int, consumer: @escaping @Sendable (Item) -> Bool) {
            self.capacity = capacity
            self.consumer = consumer
        }

        var hasEnded: Bool { state.withLock { $0.hasEnded } }

        var droppedCount: Int { state.withLock { $0.dropped } }

        func submit(_ item: Item) {
            let mustWake = state.withLock { state in
                guard state.items.count < capacity else {
                    state.dropped += 1
                    return false
                }
                state.items.append(item)
                state.submitted += 1
                return state.wakeIfWaiting()
            }
            if mustWake { wake.signal() }
        }

        func whenConsumed(_ resume: @escaping @Sendable () -> Void) {
            let now = state.withLock { state in
                if state.consumed == state.submitted { return true }
                state.waiters.append((state.submitted, resume))
                return false
            }
            if now { resume() }
        }

        func close() {
            let mustWake = state.withLock { state in
                state.isClosing = true
                return state.wakeIfWaiting()
            }
            if mustWake { wake.signal() }
        }

        /// The thread's body: consume until closed and empty.
        func run() {
            Self.blockSIGPIPE()
            while true {
                let (batch, isClosing, hasEnded) = state.withLock { state in
                    defer { state.items.removeAll(keepingCapacity: true) }
                    if state.items.isEmpty, !state.isClosing { state.isWaiting = true }
                    return (state.items, state.isClosing, state.hasEnded)
                }
                if batch.isEmpty {
                    if isClosing { return }
                    // Marked waiting above: the next submit (or close) signals once.
                    wake.wait()
                    continue
                }
                var ended = hasEnded
                for item in batch where !ended {
                    ended = !consumer(item)
                }
                let ready = state.withLock { state -> [@Sendable () -> Void] in
                    state.hasEnded = ended
                    state.consumed += UInt64(batch.count)
                    let consumed = state.consumed
                    let ready = state.waiters.filter { $0.count <= consumed }.map(\.resume)
                    state.waiters.removeAll { $0.count <= consumed }
                    return ready
                }
                for resume in ready { resume() }
            }
        }

        private static func blockSIGPIPE() {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &set, nil)
        }
    }
}

/// How many items a ``SinkWriter`` lets wait for its consumer.
enum SinkCapacity {
    /// 65,536: a few seconds of notifications from a busy process, a few tens of MiB at most.
    static let `default` = 65_536
}

#if canImport(Glibc)
    private let systemWrite = Glibc.write
#elseif canImport(Musl)
    private let systemWrite = Musl.write
#elseif canImport(Darwin)
    private let systemWrite = Darwin.write
#endif

/// Writes text to a file descriptor with `write(2)`, whole, never with a call that ends the process when
/// the descriptor is closed or full (`FileHandle.write(_:)` traps on `EPIPE`, `EBADF` and `ENOSPC`): what
/// the shipped sinks write with, and what a program writing to stdout or stderr itself can use.
public enum FileDescriptorOutput {
    /// Writes all of `text`, retrying after interruptions and partial writes (a pipe takes at most its
    /// free space at once) and waiting while a non-blocking descriptor is full. A write to a pipe whose
    /// reader has gone also raises `SIGPIPE`: the calling thread must block or ignore it (as the sinks'
    /// thread does), or the process ends there.
    ///
    /// - Parameters:
    ///   - text: What to write, as UTF-8.
    ///   - descriptor: An open file descriptor, such as `STDOUT_FILENO`.
    /// - Returns: `nil` once everything is written; otherwise the `errno` of the write that failed (`EPIPE`:
    ///   the reader has gone; `EBADF`: the descriptor is closed; `ENOSPC`: the device is full), after which
    ///   the descriptor is not to be written again.
    @discardableResult
    public static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var text = text
        return text.withUTF8 { bytes -> Int32? in
            guard let base = bytes.baseAddress else { return nil }  // Empty: nothing to write.
            var offset = 0
            while offset < bytes.count {
                let written = systemWrite(descriptor, base + offset, bytes.count - offset)
                if written >= 0 {
                    offset += written
                    continue
                }
                let failure = errno
                switch failure {
                case EINTR:
                    continue
                case EAGAIN:
                    var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&request, 1, -1)
                default:
                    // EPIPE raised SIGPIPE at this thread: where the thread blocks it (the sinks' thread
                    // does), take it off the pending set so that it can never be delivered later.
                    if failure == EPIPE { discardPendingSIGPIPE() }
                    return failure
                }
            }
            return nil
        }
    }

    private static func discardPendingSIGPIPE() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        var pending = sigset_t()
        guard sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 else { return }
        var noWait = timespec(tv_sec: 0, tv_nsec: 0)
        _ = sigtimedwait(&set, nil, &noWait)
    }
}
