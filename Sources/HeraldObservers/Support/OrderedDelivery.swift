import Herald
import HeraldNotifications

/// A lock-guarded state whose changes produce items that a consumer receives one at a time, in the
/// order the changes happened, without the lock held while the consumer runs.
///
/// Items are queued under the same lock as the state change that produced them, which fixes their order.
/// Then whichever thread finds nobody delivering becomes the deliverer and drains the queue, including
/// items other threads add meanwhile; those threads return at once. So the consumer is never called
/// concurrently nor re-entered, and user code never runs under an observer's lock.
final class OrderedDelivery<State, Item: Sendable>: @unchecked Sendable {
    // Safety: `state` and the queue are only touched inside `guarded.withLock`.
    private struct Guarded {
        var state: State
        var items: [Item] = []
        var isDelivering = false
    }

    private let guarded: Locked<Guarded>
    private let consumer: @Sendable (Item) -> Void

    init(_ state: State, consumer: @escaping @Sendable (Item) -> Void) {
        self.guarded = Locked(Guarded(state: state))
        self.consumer = consumer
    }

    /// Reads the state under the lock.
    func read<Result>(_ body: (State) -> Result) -> Result {
        guarded.withLock { body($0.state) }
    }

    /// Mutates the state under the lock, queues the items `body` returns, and delivers them (and any
    /// others queued meanwhile) unless another thread already is.
    @discardableResult
    func update<Result>(_ body: (inout State) -> (Result, [Item])) -> Result {
        let (result, deliver) = guarded.withLock { guarded -> (Result, Bool) in
            let (result, items) = body(&guarded.state)
            guarded.items += items
            guard !guarded.items.isEmpty, !guarded.isDelivering else { return (result, false) }
            guarded.isDelivering = true
            return (result, true)
        }
        guard deliver else { return result }
        while true {
            let batch = guarded.withLock { guarded -> [Item] in
                let batch = guarded.items
                guarded.items.removeAll()
                if batch.isEmpty { guarded.isDelivering = false }
                return batch
            }
            guard !batch.isEmpty else { return result }
            for item in batch { consumer(item) }
        }
    }
}

extension OrderedDelivery where State == Void {
    /// Queues `items` and delivers them unless another thread already is.
    func submit(_ items: [Item]) {
        update { _ in ((), items) }
    }
}
