#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`, with the shape of `Synchronization.Mutex`.
///
/// Why not `Mutex`: on Linux its contended path waits on a futex that ThreadSanitizer cannot see, so
/// every correctly locked access is reported as a race (reproduced with Swift 6.3.1: four threads
/// appending under `Mutex.withLock` give "Swift access race" reports; the same program with a
/// `pthread_mutex_t` gives none). TSan intercepts pthread mutexes, so this lock keeps `make test-tsan`
/// meaningful. Never call user code or post a notification while holding it.
package final class Locked<Value>: @unchecked Sendable {
    // Safety: `value` is only touched between pthread_mutex_lock and pthread_mutex_unlock on `mutex`,
    // from whichever thread holds it.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a lock guarding `value`.
    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
