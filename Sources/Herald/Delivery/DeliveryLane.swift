import CHeraldThread
import Dispatch
import Glibc
import HeraldNotifications
import Synchronization

/// Something handed to a lane's queue (see ``OutcomeLanes``): a closure, a finished transfer's outcome for
/// its delegate, or a completed task's outcome for its session. The outcomes travel as values, so handing
/// one over allocates nothing on the loop thread for the receiving thread to free (see ``LoopThreadFrees``
/// for why that matters).
enum Delivery: Sendable {
    case work(@Sendable () -> Void)
    /// On the transport lane, or the completion lane for an outcome that can only complete its task: what
    /// follows the transfer (``OutcomeLanes/proceed(_:after:)``).
    case finishedTransfer(OutcomeLanes, any TransferDelegate, TransferOutcome)
    /// On the completion lane: serialization, the completion handler, `taskDidComplete`.
    case completion(SessionTask, TransferOutcome)

    func run() {
        switch self {
        case .work(let work): work()
        case .finishedTransfer(let lanes, let delegate, let outcome): lanes.proceed(delegate, after: outcome)
        case .completion(let task, let outcome): task.session.completionArrived(task, outcome: outcome)
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
///
/// On the session's own completion queue, the lane can also keep that queue's thread awake for the next
/// batch (``awaitNextBatch()``): a program that sends one request at a time starts the next from a
/// completion handler, and when the session's only transfer is that request, its batch is the queue's next
/// work, due in the time loopback takes to answer. Waiting for it awake, for at most ``waitDuration``, spares
/// the thread going back to the pool and the loop thread a wake-up to bring it back: with ``FollowUpWait``
/// on the loop thread, such a request costs one context switch, as a single thread running curl does. The
/// library's blocks for the session's queue (its completion work, hooks, event blocks) go through
/// `enqueue(_:)`, which counts them: the last of them to run may wait, none waits while another is
/// queued, and one queued during a wait ends it. The wait also ends as soon as a batch is published; it
/// holds up what else is dispatched to the queue (a caller's own blocks, progress handlers) by at most
/// ``waitDuration``, and ``WaitBackoff`` turns it off while the batches come later than that.
final class DeliveryLane: @unchecked Sendable {
    // Safety: `collected` and `isCollecting` are used on the loop thread only; `handedOver` is guarded by
    // its lock; `batchesRun`, `backoff` and the wait counts are used on `queue` only, and only when it is
    // serial (`waitsForNextBatch`); `deferred`, `proceededInBatch` and `deferredLane` only by the thread
    // running one of this lane's batches (`batchThread`), and only on a serial queue (`isSerial`), where the
    // batches run one at a time; the other counters are atomic.
    let queue: DispatchQueue
    let group: DispatchGroup?
    /// Whether the lane's queue is serial, so that its batches run one at a time: only then do they keep
    /// deliveries for the batch's end (``deferUntilBatchEnds(_:to:)``).
    let isSerial: Bool
    /// Whether this lane may wait for its next batch: only on a serial queue the session owns.
    let waitsForNextBatch: Bool

    /// How long the completion queue's thread waits awake for the next batch.
    static let waitDuration: UInt64 = 300_000

    /// The session's transfers started and not yet done with: a transfer is done with once what follows it
    /// has run, on the transport lane or the loop thread, and has either started the next transfer or handed
    /// the task's completion to this lane; on this lane itself (an outcome that can only complete its task),
    /// once its follow-up has run, its completion kept for the batch's end. Only this lane's queue waits on
    /// the count, and only after a batch's end, so that order makes no difference to it. Any thread.
    private let transfersOutstanding = Atomic<Int>(0)
    /// Batches published, and when the last was (``HandOffClock``); written by the loop thread.
    private let batchesPublished = Atomic<Int>(0)
    private let lastPublished = Atomic<UInt64>(0)
    /// The library's blocks queued for `queue` (or a queue that targets it) and not yet finished; any thread.
    private let queuedWork = Atomic<Int>(0)
    /// Batches run; on `queue`.
    @exclusivity(unchecked) private var batchesRun = 0
    /// Whether waiting pays; on `queue`.
    @exclusivity(unchecked) private var backoff = WaitBackoff(duration: DeliveryLane.waitDuration)
    /// How many waits started and how many a batch ended, for tests; on `queue`.
    @exclusivity(unchecked) private(set) var waitsStarted = 0
    @exclusivity(unchecked) private(set) var waitsAnswered = 0
    @exclusivity(unchecked) private(set) var waitsInterrupted = 0

    private struct HandedOver {
        /// The published batches, oldest first; one dispatched block is on its way for each.
        var batches: [[Delivery]] = []
        /// Emptied batch arrays, kept for the loop thread to fill again.
        var empties: [[Delivery]] = []
    }

    /// How many emptied arrays are kept; a burst's extra ones are let go of.
    private static let keptEmpties = 4

    @exclusivity(unchecked) private var collected: [Delivery] = []
    /// The thread running one of this lane's batches (`pthread_self()`), or 0: what
    /// ``deferUntilBatchEnds(_:to:)`` asks. Written on `queue`, read by any thread.
    private let batchThread = Atomic<UInt>(0)
    /// Whether the calling thread is running one of this lane's batches (never on a concurrent queue,
    /// whose batches may run at the same time).
    private var isRunningBatchHere: Bool {
        isSerial && batchThread.load(ordering: .relaxed) == UInt(pthread_self())
    }
    /// Deliveries for another lane made while a batch of this one runs, the transfers done with meanwhile
    /// (``deferTransferProceeded(for:)``), and that lane; on `queue`.
    @exclusivity(unchecked) private var deferred: [Delivery] = []
    @exclusivity(unchecked) private var proceededInBatch = 0
    @exclusivity(unchecked) private var deferredLane: DeliveryLane?
    /// Whether a finished transfer's follow-up runs now, in one of this lane's batches
    /// (``followUp(_:)``): only then are deliveries to this lane itself kept for the batch's end; on `queue`.
    @exclusivity(unchecked) private var isFollowingUp = false
    /// Whether this lane has deliveries collected in the current loop iteration. Loop thread only.
    @exclusivity(unchecked) var isCollecting = false
    private let handedOver = Locked(HandedOver())

    init(queue: DispatchQueue, group: DispatchGroup?, isSerial: Bool, waitsForNextBatch: Bool = false) {
        self.queue = queue
        self.group = group
        self.isSerial = isSerial
        self.waitsForNextBatch = isSerial && waitsForNextBatch
    }

    /// A transfer of the session is about to start (or a cached response stands in for one); its outcome
    /// will come through this lane. Any thread.
    func transferStarted() {
        transfersOutstanding.add(1, ordering: .relaxed)
    }

    /// `count` of the session's transfers are done with: what follows each has run, and any completion it
    /// made is queued on this lane. Any thread.
    func transfersProceeded(_ count: Int = 1) {
        transfersOutstanding.subtract(count, ordering: .relaxed)
    }

    /// The session's transfers started and not yet done with (see ``transfersProceeded(_:)``).
    var outstandingTransfers: Int { transfersOutstanding.load(ordering: .relaxed) }

    /// Runs `work` on this lane's queue, in its group, counted as the library's work: the last such block to
    /// finish may wait for the next batch (``awaitNextBatch()``).
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        enqueue(.work(work))
    }

    /// When called from a batch this lane is running, keeps `delivery` for `lane` and hands every delivery
    /// kept so over in one block when the batch ends, and returns `true`; elsewhere returns `false`. The
    /// transport lane's batches complete several tasks at once: one block for their completions costs the
    /// completion queue one hand-off, not one each. When `lane` is this lane, the kept deliveries run at the
    /// batch's end, in the same block, after every delivery of the batch.
    func deferUntilBatchEnds(_ delivery: Delivery, to lane: DeliveryLane) -> Bool {
        guard isRunningBatchHere else { return false }
        // To this lane itself, only the completion a follow-up makes: one that user code in the batch makes
        // (a handler cancelling a task between transfers) goes behind what is queued already, that task's
        // own earlier blocks among them, as from any other thread.
        if lane === self, !isFollowingUp { return false }
        deferred.append(delivery)
        deferredLane = lane
        return true
    }

    /// Runs `followUp`, what follows a finished transfer. In one of this lane's batches, a completion it
    /// delivers to this lane is kept for the batch's end (``deferUntilBatchEnds(_:to:)``), so that it runs in
    /// the same block; anywhere else it just runs.
    func followUp(_ followUp: () -> Void) {
        guard isRunningBatchHere else { return followUp() }
        isFollowingUp = true
        followUp()
        isFollowingUp = false
    }

    /// When called from a batch this lane is running, counts a transfer done with for `lane` when the batch
    /// ends, after the batch's deferred deliveries are handed over, and returns `true`; elsewhere returns
    /// `false`. Counted earlier, `lane`'s queue could see its outstanding transfers drop to one while the
    /// others' completions are still on their way, and wait for the loop thread in vain.
    func deferTransferProceeded(for lane: DeliveryLane) -> Bool {
        guard isRunningBatchHere else { return false }
        proceededInBatch += 1
        deferredLane = lane
        return true
    }

    /// Runs `deliveries` on this lane's queue in one block, in order, in its group, counted as one of the
    /// library's blocks.
    func enqueue(batch deliveries: [Delivery]) {
        queuedWork.add(1, ordering: .relaxed)
        queue.async(group: group) { [self] in
            for delivery in deliveries { delivery.run() }
            finishedQueuedWork()
        }
    }

    /// Runs `delivery` on this lane's queue, in its group, counted as the library's work.
    func enqueue(_ delivery: Delivery) {
        queuedWork.add(1, ordering: .relaxed)
        queue.async(group: group) { [self] in
            delivery.run()
            finishedQueuedWork()
        }
    }

    private func finishedQueuedWork() {
        if queuedWork.subtract(1, ordering: .relaxed).newValue == 0 { awaitNextBatch() }
    }

    /// On `queue`, after the library's last queued block for it: when the session's only outstanding
    /// transfer is the queue's next work, waits awake for its batch, for at most ``waitDuration``. A block of
    /// the library's queued meanwhile (a hook the transfer needs answered, another task's completion) ends
    /// the wait at once. Returns at once in every other case.
    func awaitNextBatch() {
        guard waitsForNextBatch, queuedWork.load(ordering: .relaxed) == 0,
            transfersOutstanding.load(ordering: .relaxed) == 1
        else { return }
        // A batch counted and not yet run is on its way: the queue's thread runs it next without sleeping.
        // The count may also trail the batches run, by the one whose block ran before the loop thread
        // counted it (it counts after dispatching); that one is no answer to wait for, so the wait is for a
        // count beyond the batches run, not for any change of it.
        let run = batchesRun
        guard batchesPublished.load(ordering: .acquiring) <= run else { return }
        let start = HandOffClock.now
        guard backoff.shouldWait(at: start) else { return }
        waitsStarted += 1
        let deadline = start + Self.waitDuration
        while batchesPublished.load(ordering: .acquiring) <= run {
            if queuedWork.load(ordering: .relaxed) > 0 {
                // Work that may be what the transfer waits for: neither an answer nor a miss.
                waitsInterrupted += 1
                return
            }
            if HandOffClock.now >= deadline {
                backoff.waitEnded(answered: false)
                return
            }
            hn_cpu_relax()
        }
        waitsAnswered += 1
        backoff.waitEnded(answered: true)
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
        if waitsForNextBatch { lastPublished.store(HandOffClock.now, ordering: .relaxed) }
        queue.async(group: group) { [self] in runOldestBatch() }
        // After the dispatch: a thread waiting for this count finds the block already queued, and runs it
        // next without going to sleep.
        if waitsForNextBatch { batchesPublished.add(1, ordering: .releasing) }
    }

    /// Runs the oldest published batch. On `queue`.
    private func runOldestBatch() {
        if waitsForNextBatch {
            batchesRun += 1
            backoff.handOffArrived(at: lastPublished.load(ordering: .relaxed))
        }
        var batch = handedOver.withLock { lists in
            // One block per published batch, so there is always one here; a list of a few batches at most,
            // so taking the first shifts a few references.
            lists.batches.isEmpty ? [] : lists.batches.removeFirst()
        }
        batchThread.store(UInt(pthread_self()), ordering: .relaxed)
        for delivery in batch { delivery.run() }
        batchThread.store(0, ordering: .relaxed)
        if let lane = deferredLane {
            deferredLane = nil
            if !deferred.isEmpty {
                var handed: [Delivery] = []
                swap(&handed, &deferred)
                if lane === self {
                    // On this lane's queue already: no other block, no hand-off. The batch has ended, so
                    // what these deliveries deliver goes its usual way.
                    for delivery in handed { delivery.run() }
                } else {
                    lane.enqueue(batch: handed)
                }
            }
            if proceededInBatch > 0 {
                lane.transfersProceeded(proceededInBatch)
                proceededInBatch = 0
            }
        }
        batch.removeAll(keepingCapacity: true)
        handedOver.withLock { lists in
            if lists.empties.count < Self.keptEmpties { lists.empties.append(batch) }
        }
        // The batch may have started the next hop of a redirect, the session's only transfer now.
        awaitNextBatch()
    }
}
