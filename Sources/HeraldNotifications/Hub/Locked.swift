#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a pthread mutex: the hub's registry, each queue observer's mailbox, the name table.
///
/// Not `Synchronization.Mutex`, for two measured reasons on Linux (Swift 6.3.1, 2 cores):
/// - Under contention its lock spins for up to 1,000 `pause` instructions before sleeping on a
///   priority-inheritance futex. With 8 threads posting to one `.queue` observer, the posting threads
///   spent 45% of their time spinning in `_MutexHandle._lockSlow` and the stress test took 15–30 s;
///   a plain pthread mutex, which sleeps without spinning, does not have that pathology.
/// - Its contended path runs in the uninstrumented Swift runtime, so ThreadSanitizer misses the
///   acquire and reports false races; ThreadSanitizer intercepts `pthread_mutex_lock`.
@usableFromInline
final class Locked<Value>: @unchecked Sendable {
    // Safety: `value` is read and written only between `pthread_mutex_lock(mutex)` and
    // `pthread_mutex_unlock(mutex)`, by whichever thread holds the mutex. `mutex` is allocated once, never
    // moves, and is destroyed in `deinit`, when no other reference to the lock exists.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Never call user code from `body`.
    @inlinable
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }
}
