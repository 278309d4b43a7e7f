import Foundation

/// A value behind a lock, for test bookkeeping shared between threads.
///
/// Uses `NSLock` (a pthread mutex, which ThreadSanitizer understands) rather than
/// `Synchronization.Mutex`, whose contended slow path on Linux is invisible to ThreadSanitizer.
final class Guarded<Value>: @unchecked Sendable {
    // Safety: `value` is only read or written while `lock` is held, by whichever thread holds it.
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
