import Synchronization

/// Records values from any thread and lets a test await a count with a deadline.
///
/// Waiting never sleeps until an event: it suspends on a continuation that `append` resumes, raced
/// against a timeout that makes the wait return `false`.
final class Recorder<Element: Sendable>: Sendable {
    private struct Waiter {
        let count: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var elements: [Element] = []
        var waiters: [UInt64: Waiter] = [:]
        var cancelledWaiters: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
    }

    private let state = Guarded(State())

    init() {}

    var elements: [Element] { state.withLock { $0.elements } }

    var count: Int { state.withLock { $0.elements.count } }

    func append(_ element: Element) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.elements.append(element)
            guard !state.waiters.isEmpty else { return [] }
            let count = state.elements.count
            let ready = state.waiters.filter { $0.value.count <= count }
            for id in ready.keys { state.waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Waits until at least `count` elements were recorded.
    ///
    /// - Returns: `true` if they were, `false` if `timeout` passed first.
    func wait(forCount count: Int, timeout: Duration = .seconds(10)) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitWithoutDeadline(forCount: count) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || self.count >= count
        }
    }

    private func waitWithoutDeadline(forCount count: Int) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow: Bool? = state.withLock { state in
                    if state.elements.count >= count { return true }
                    if state.cancelledWaiters.remove(id) != nil { return false }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelledWaiters.insert(id)
                return nil
            }
            waiter?.continuation.resume(returning: false)
        }
    }
}

/// A value that counts how often something happened, from any thread.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    init() {}
    var count: Int { value.load(ordering: .acquiring) }
    func increment() { value.wrappingAdd(1, ordering: .acquiringAndReleasing) }
}

/// A sender: any object can be one.
final class Sender: Sendable, CustomStringConvertible {
    let label: String
    init(_ label: String) { self.label = label }
    var description: String { label }
}
