import Dispatch
import HeraldNotifications

/// Something the loop thread hands to a dispatch queue: a closure, or a finished transfer's outcome for its
/// delegate. A finished transfer travels as a value, so handing one over allocates nothing on the loop
/// thread for the receiving thread to free (see ``LoopThreadFrees`` for why that matters).
enum Delivery: Sendable {
    case work(@Sendable () -> Void)
    case finishedTransfer(any TransferDelegate, TransferOutcome)

    func run() {
        switch self {
        case .work(let work): work()
        case .finishedTransfer(let delegate, let outcome): delegate.transferDidFinishOffLoop(outcome)
        }
    }
}

/// Where the deliveries to one queue (in one group) wait between the loop thread and that queue; one
/// per session.
///
/// The loop thread collects a loop iteration's deliveries here (``collect(_:)``), hands them over as one
/// batch at the iteration's end (``publish()``) and dispatches one block for them. Each block runs one
/// batch, the oldest. On a serial queue (the completion queue a session owns) the batches therefore run
/// in the order they were published, and none runs ahead of what the loop thread dispatched to that queue
/// directly before publishing it. On a concurrent queue (the global queue a session uses when its caller
/// passed the completion queue) the blocks, and so the batches, may run at the same time, as any two
/// dispatches there may. The batches' arrays are kept and reused: in a steady flow of deliveries neither
/// side allocates for them.
final class DeliveryLane: @unchecked Sendable {
    // Safety: `collected` and `isCollecting` are used on the loop thread only; `handedOver` is guarded by
    // its lock.
    let queue: DispatchQueue
    let group: DispatchGroup?

    private struct HandedOver {
        /// The published batches, oldest first; one dispatched block is on its way for each.
        var batches: [[Delivery]] = []
        /// Emptied batch arrays, kept for the loop thread to fill again.
        var empties: [[Delivery]] = []
    }

    /// How many emptied arrays are kept; a burst's extra ones are let go of.
    private static let keptEmpties = 4

    @exclusivity(unchecked) private var collected: [Delivery] = []
    /// Whether this lane has deliveries collected in the current loop iteration. Loop thread only.
    @exclusivity(unchecked) var isCollecting = false
    private let handedOver = Locked(HandedOver())

    init(queue: DispatchQueue, group: DispatchGroup?) {
        self.queue = queue
        self.group = group
    }

    /// Adds a delivery to the current loop iteration's batch. Loop thread only.
    func collect(_ delivery: consuming Delivery) {
        collected.append(delivery)
    }

    /// Hands the iteration's batch over and dispatches the block that will run it. Loop thread only.
    func publish() {
        isCollecting = false
        guard !collected.isEmpty else { return }
        var batch: [Delivery] = []
        swap(&batch, &collected)
        handedOver.withLock { lists in
            lists.batches.append(batch)
            if let empty = lists.empties.popLast() { collected = empty }
        }
        queue.async(group: group) { [self] in runOldestBatch() }
    }

    /// Runs the oldest published batch. On `queue`.
    private func runOldestBatch() {
        var batch = handedOver.withLock { lists in
            // One block per published batch, so there is always one here; a list of a few batches at most,
            // so taking the first shifts a few references.
            lists.batches.isEmpty ? [] : lists.batches.removeFirst()
        }
        for delivery in batch { delivery.run() }
        batch.removeAll(keepingCapacity: true)
        handedOver.withLock { lists in
            if lists.empties.count < Self.keptEmpties { lists.empties.append(batch) }
        }
    }
}
