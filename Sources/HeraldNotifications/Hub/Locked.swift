import Synchronization

/// A `Mutex` whose ordering ThreadSanitizer can see.
///
/// On Linux, `Synchronization.Mutex` acquires a contended lock in its slow path, inside the
/// uninstrumented Swift runtime, so ThreadSanitizer misses that acquire and reports races between
/// critical sections the mutex does order. An acquiring load at the start of each critical section and a
/// releasing store at its end (plain moves on x86) restate the ordering the mutex already provides, in
/// instrumented code. They add no synchronization the mutex does not already give.
@usableFromInline
struct Locked<Value: Sendable>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>
    @usableFromInline let witness = Atomic<Int>(0)

    @inlinable
    init(_ value: sending Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value. Never call user code from `body`.
    @inlinable
    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { value -> Result in
            _ = witness.load(ordering: .acquiring)
            defer { witness.store(0, ordering: .releasing) }
            return body(&value)
        }
    }
}
