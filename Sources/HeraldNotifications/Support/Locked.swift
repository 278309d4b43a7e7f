#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a pthread mutex, with the shape of `Synchronization.Mutex`: the one lock of the package.
///
/// It lives in the lowest module so that every module of the package uses this one (`package` access):
/// the hub's registry, each queue observer's mailbox and the name table here; sessions, tasks and the
/// engine in `Herald`; `HeraldObservers` and `HeraldTesting`. Never call user code or post a notification
/// while holding it.
///
/// Not `Synchronization.Mutex`, for two measured reasons on Linux (Swift 6.3.1, 2 cores):
/// - Under contention its lock spins for up to 1,000 `pause` instructions before sleeping on a
///   priority-inheritance futex. With 8 threads posting to one `.queue` observer, the posting threads
///   spent 45% of their time spinning in `_MutexHandle._lockSlow` and the stress test took 15–30 s;
///   a plain pthread mutex, which sleeps without spinning, does not have that pathology.
/// - Its contended path runs in the uninstrumented Swift runtime, so ThreadSanitizer misses the
///   acquire and reports false races (four threads appending under `Mutex.withLock` give "Swift access
///   race" reports); ThreadSanitizer intercepts `pthread_mutex_lock`, which keeps `make test-tsan`
///   meaningful.
@usableFromInline
package final class Locked<Value>: @unchecked Sendable {
    // Safety: `value` is read and written only between `pthread_mutex_lock(mutex)` and
    // `pthread_mutex_unlock(mutex)`, by whichever thread holds the mutex. `mutex` is allocated once, never
    // moves, and is destroyed in `deinit`, when no other reference to the lock exists. The mutex already
    // gives `withLock` exclusive access (a nested `withLock` on the same lock would deadlock before it could
    // overlap), so Swift's run-time exclusivity check on `value` is switched off: it cost about 80
    // instructions per call.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline @exclusivity(unchecked) var value: Value

    /// Creates a lock guarding `value`.
    ///
    /// `consuming`, so the value moves in: without it, a caller building the value in place
    /// (`Locked(State(…))`) had it copied in and the temporary destroyed.
    @inlinable
    package init(_ value: consuming Value) {
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
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
