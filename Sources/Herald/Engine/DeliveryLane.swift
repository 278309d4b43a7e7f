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

/// Where the deliveries to one queue (in one group) wait between the loop thread and that queue.
///
/// The loop thread collects a loop iteration's deliveries here (``collect(_:)``), hands them over as one
/// batch at the iteration's end (``publish()``) and dispatches one block for them. Each block runs one
/// batch, the oldest, so a batch never runs ahead of what the loop thread dispatched to the queue directly
/// before publishing it. The lists are kept and trade buffers: in a steady flow of deliveries neither side
/// allocates, and neither frees memory the other allocated.
final class DeliveryLane: @unchecked Sendable {
    // Safety: `collected` and `isCollecting` are used on the loop thread only; `handedOver` is guarded by
    // its lock.
    let queue: DispatchQueue
    let group: DispatchGroup?

    private struct HandedOver {
        var deliveries: [Delivery] = []
        /// How many of `deliveries`, from the front, each published batch holds, oldest first.
        var batchSizes: [Int] = []
        var spare: [Delivery] = []
    }

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
        let count = collected.count
        guard count > 0 else { return }
        handedOver.withLock { lists in
            if lists.deliveries.isEmpty {
                // The lists trade buffers: the loop thread keeps the emptied one for its next batch.
                swap(&lists.deliveries, &collected)
            } else {
                lists.deliveries.append(contentsOf: collected)
            }
            lists.batchSizes.append(count)
        }
        collected.removeAll(keepingCapacity: true)
        queue.async(group: group) { [self] in runOldestBatch() }
    }

    /// Runs the oldest published batch. On `queue`.
    private func runOldestBatch() {
        var batch: [Delivery] = []
        handedOver.withLock { lists in
            guard !lists.batchSizes.isEmpty else { return }
            let size = lists.batchSizes.removeFirst()
            if size == lists.deliveries.count {
                swap(&batch, &lists.deliveries)
                swap(&lists.deliveries, &lists.spare)
            } else {
                batch = Array(lists.deliveries[..<size])
                lists.deliveries.removeFirst(size)
            }
        }
        for delivery in batch { delivery.run() }
        batch.removeAll(keepingCapacity: true)
        handedOver.withLock { lists in
            if lists.spare.capacity < batch.capacity { swap(&lists.spare, &batch) }
        }
    }
}
