#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CCurl
import HeraldNotifications
import Synchronization

/// Gives memory that a loop thread allocated back on a loop thread, whichever thread is done with it.
///
/// glibc's allocator gives each thread an arena of its own. A thread that frees a chunk from another
/// thread's arena takes that arena's lock, and a response body is such a chunk: the loop thread allocates
/// it as the bytes arrive, and the completion handler's thread lets go of it. With transfers finishing
/// all the time, that thread and the loop thread, itself allocating for libcurl under the same lock, meet
/// there often enough for each meeting to cost a `futex` system call and often a thread switch. So a
/// small body's memory is queued here instead and freed by the loop thread, without a lock of the
/// allocator's to wait for, the next time it finishes transfers or runs commands.
///
/// What waits here is bounded (``byteLimit``, counted in the blocks' usable sizes): past it, or for a
/// block over ``largestDeferred`` bytes, the memory is freed at once on the releasing thread, as `free`
/// would. A large body is one block among many bytes of transfer, so its one meeting on the lock doesn't
/// matter; the largest (over glibc's mapping threshold, 128 KiB to 32 MiB as glibc adjusts it) are mapped
/// on their own and take no arena's lock at all. Blocks wait only until a loop thread next works: an
/// engine that goes quiet leaves up to ``byteLimit`` bytes waiting until its next transfer or command.
///
/// A loop thread's drain leaves the newest few small blocks (``keptForReuse``, of at most
/// ``largestKeptForReuse`` bytes) waiting, so an engine that goes quiet keeps up to 256 KiB of them until its
/// next transfer or command; a new body in memory takes one of about its size (``take(atLeast:)``) instead
/// of allocating: with transfers finishing all the
/// time, a body is made in the memory of one that just finished, and neither the allocation nor the free
/// happens. Allocating a block of 1 KiB or more also makes glibc merge every small chunk freed since the
/// last such allocation (`malloc_consolidate`), which reuse avoids too.
final class LoopThreadFrees: Sendable {
    /// The one every engine drains and every response body in memory is released to.
    static let shared = LoopThreadFrees()

    /// The largest block that waits for a loop thread; anything larger is freed at once.
    let largestDeferred: Int
    /// How many bytes may wait for a loop thread at most.
    let byteLimit: Int

    init(largestDeferred: Int = 64 * 1024, byteLimit: Int = 1 << 20) {
        self.largestDeferred = largestDeferred
        self.byteLimit = byteLimit
    }

    private struct Waiting {
        var pointers: [UInt] = []
        /// Each waiting block's usable size, beside its pointer.
        var sizes: [Int] = []
        var bytes = 0
        /// The buffer the last drain emptied, kept so that neither side allocates a new one each time.
        var spare: [UInt] = []
    }

    private let waiting = Locked(Waiting())
    /// How many blocks wait, kept beside the list (written under its lock) so that a drain with nothing to
    /// free, at the end of every busy loop iteration, is one load instead of a lock and an unlock.
    private let waitingBlocks = Atomic<Int>(0)
    /// How many of them are larger than a drain keeps (``largestKeptForReuse``), kept the same way, so that a
    /// drain with only blocks to keep waiting is one load more, not a lock.
    private let largeWaitingBlocks = Atomic<Int>(0)

    /// ``release(_:bytes:)`` on ``shared``: a `Data` deallocator that captures nothing.
    static func releaseToShared(_ pointer: UnsafeMutableRawPointer, bytes: Int) {
        shared.release(pointer, bytes: bytes)
    }

    /// Frees `pointer` (from `malloc`, `bytes` long) now or on the next loop iteration. Any thread.
    func release(_ pointer: UnsafeMutableRawPointer, bytes: Int) {
        // What the block really holds: a Data may have been given fewer bytes than were allocated.
        let bytes = max(bytes, herald_malloc_usable_size(pointer))
        if bytes <= largestDeferred {
            let queued = waiting.withLock { waiting in
                guard waiting.bytes + bytes <= byteLimit else { return false }
                waiting.pointers.append(UInt(bitPattern: pointer))
                waiting.sizes.append(bytes)
                waiting.bytes += bytes
                waitingBlocks.store(waiting.pointers.count, ordering: .relaxed)
                if bytes > Self.largestKeptForReuse { largeWaitingBlocks.add(1, ordering: .relaxed) }
                return true
            }
            if queued { return }
        }
        free(pointer)
    }

    /// A waiting block of `bytes` to twice as many usable bytes, taken out of the queue for a new body, or
    /// `nil` when none waits. Loop thread only: the block is a loop thread's, as a new one would be, and
    /// reusing it saves an allocation and the free it would have waited for. With transfers finishing all
    /// the time, the bodies of the last ones are the right size for the next.
    func take(atLeast bytes: Int) -> (block: UnsafeMutableRawPointer, size: Int)? {
        guard waitingBlocks.load(ordering: .relaxed) > 0 else { return nil }
        return waiting.withLock { waiting in
            // From the newest: its memory is the likeliest still to be in the cache.
            guard let index = waiting.sizes.lastIndex(where: { $0 >= bytes && $0 / 2 <= bytes }),
                let block = UnsafeMutableRawPointer(bitPattern: waiting.pointers[index])
            else { return nil }
            let size = waiting.sizes[index]
            waiting.pointers.remove(at: index)
            waiting.sizes.remove(at: index)
            waiting.bytes -= size
            waitingBlocks.store(waiting.pointers.count, ordering: .relaxed)
            if size > Self.largestKeptForReuse { largeWaitingBlocks.subtract(1, ordering: .relaxed) }
            return (block, size)
        }
    }

    /// How many of the newest waiting blocks an engine's drain leaves for the next bodies to take
    /// (``take(atLeast:)``): as many as finish in a busy loop iteration or two, so that a body is usually
    /// made in the memory of one that finished just before.
    static let keptForReuse = 16
    /// The largest block a drain leaves for reuse: the kept blocks hold at most a quarter of the default
    /// ``byteLimit``, so they never crowd out the blocks still to be released.
    static let largestKeptForReuse = 16 * 1024

    /// Frees everything waiting but the newest `kept` blocks of at most ``largestKeptForReuse`` bytes.
    /// Called by a loop thread after it finished transfers or ran commands (with ``keptForReuse``).
    func drain(keeping kept: Int = 0) {
        // A block queued just after this load waits for the next drain, as it would behind the lock.
        guard waitingBlocks.load(ordering: .relaxed) > kept || largeWaitingBlocks.load(ordering: .relaxed) > 0
        else { return }
        var pointers: [UInt] = []
        let any = waiting.withLock { waiting in
            let count = waiting.pointers.count
            // From the newest back: the blocks from `start` on that are small enough stay.
            var start = count
            var found = 0
            while start > 0, found < kept {
                start -= 1
                if waiting.sizes[start] <= Self.largestKeptForReuse { found += 1 }
            }
            guard found < count else {
                largeWaitingBlocks.store(0, ordering: .relaxed)
                return false
            }
            swap(&pointers, &waiting.spare)
            var staying = 0
            for index in 0..<count {
                let size = waiting.sizes[index]
                if index >= start, size <= Self.largestKeptForReuse {
                    waiting.pointers[staying] = waiting.pointers[index]
                    waiting.sizes[staying] = size
                    staying += 1
                } else {
                    pointers.append(waiting.pointers[index])
                    waiting.bytes -= size
                }
            }
            waiting.pointers.removeLast(count - staying)
            waiting.sizes.removeLast(count - staying)
            waitingBlocks.store(staying, ordering: .relaxed)
            largeWaitingBlocks.store(0, ordering: .relaxed)
            return true
        }
        guard any else { return }
        // Freed outside the lock, so that a releasing thread never waits for them.
        for address in pointers { free(UnsafeMutableRawPointer(bitPattern: address)) }
        pointers.removeAll(keepingCapacity: true)
        waiting.withLock { waiting in
            if waiting.spare.capacity < pointers.capacity { swap(&waiting.spare, &pointers) }
        }
    }

    /// How many blocks wait for a loop thread now.
    var waitingCount: Int { waiting.withLock { $0.pointers.count } }
}
