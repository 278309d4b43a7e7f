/// Items that state changes under a lock produce, carried out after the lock is released by one thread at a
/// time, in the order of the changes: the package's one ordered-delivery helper (`package` access). A
/// task's effects (`Herald`) and an observer's state changes (`HeraldObservers`, through ``OrderedDelivery``)
/// go through it.
///
/// It lives inside the lock's value, beside the state it serves: items are submitted under the same lock as
/// the change that produced them, which fixes their order. The first thread to submit while nobody is
/// carrying out items takes the turn: it carries out its items after releasing the lock, then asks for
/// ``next()`` under the lock until that returns nothing. A thread that submits while another has the turn
/// leaves its items to that thread and returns at once. So items never run under the lock, never out of
/// order and never concurrently: a `taskDidSuspend` can't overtake the `taskDidResume` before it, and a
/// consumer is never re-entered.
///
/// Its members are `@inlinable` so that each client module specializes them for its item type: a task's
/// transition submits and asks for the next items on every change, and the generic versions' witness-table
/// lookups cost more than the rest of the turn. The type is `@usableFromInline` as well: without it the
/// compiler accepts `@inlinable` on a `package` type's members but leaves every call to the generic code.
@usableFromInline
package struct OrderedTurns<Item> {
    @usableFromInline var pending: [Item] = []
    @usableFromInline var isRunning = false

    /// No items, nobody's turn.
    @inlinable package init() {}

    /// Queues `items`; returns them when the caller is to carry them out now (then it must call ``next()``
    /// until that returns nothing), or nothing when another thread has the turn.
    @inlinable package mutating func submit(_ items: [Item]) -> [Item] {
        guard !items.isEmpty else { return [] }
        if isRunning {
            pending.append(contentsOf: items)
            return []
        }
        isRunning = true
        return items
    }

    /// The items queued meanwhile; an empty answer ends the caller's turn.
    @inlinable package mutating func next() -> [Item] {
        guard !pending.isEmpty else {
            isRunning = false
            return []
        }
        defer { pending = [] }
        return pending
    }
}

/// A lock-guarded state whose changes produce items that a consumer receives one at a time, in the order the
/// changes happened, without the lock held while the consumer runs (an ``OrderedTurns`` beside the state).
/// User code therefore never runs under the lock, and the consumer is never called concurrently.
///
/// `@usableFromInline` with `@inlinable` members for the same reason as ``OrderedTurns``: its clients are in
/// other modules (the activity indicator updates it twice a request), where the generic versions looked up
/// the metadata of `Guarded` and `OrderedTurns` for their types at run time on every call.
@usableFromInline
package final class OrderedDelivery<State, Item: Sendable>: @unchecked Sendable {
    // Safety: `state` and the turns are only touched inside `guarded.withLock`.
    @usableFromInline
    struct Guarded {
        @usableFromInline var state: State
        @usableFromInline var turns = OrderedTurns<Item>()

        @inlinable init(state: State) { self.state = state }
    }

    @usableFromInline let guarded: Locked<Guarded>
    @usableFromInline let consumer: @Sendable (Item) -> Void

    /// A delivery starting from `state`, handing items to `consumer`.
    @inlinable
    package init(_ state: State, consumer: @escaping @Sendable (Item) -> Void) {
        self.guarded = Locked(Guarded(state: state))
        self.consumer = consumer
    }

    /// Reads the state under the lock.
    @inlinable
    package func read<Result>(_ body: (State) -> Result) -> Result {
        guarded.withLock { body($0.state) }
    }

    /// Mutates the state under the lock, queues the items `body` returns, and delivers them (and any others
    /// queued meanwhile) unless another thread has the turn.
    @inlinable @discardableResult
    package func update<Result>(_ body: (inout State) -> (Result, [Item])) -> Result {
        let (result, turn) = guarded.withLock { guarded -> (Result, [Item]) in
            let (result, items) = body(&guarded.state)
            return (result, guarded.turns.submit(items))
        }
        var batch = turn
        while !batch.isEmpty {
            for item in batch { consumer(item) }
            batch = guarded.withLock { $0.turns.next() }
        }
        return result
    }
}

extension OrderedDelivery where State == Void {
    /// Queues `items` and delivers them unless another thread has the turn.
    @inlinable
    package func submit(_ items: [Item]) {
        update { _ in ((), items) }
    }
}
