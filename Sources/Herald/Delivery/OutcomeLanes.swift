import Dispatch

/// The path of one session's transfer outcomes, from libcurl's "done" to the completion handler: two lanes
/// and the rule for each.
///
/// 1. **The transport lane** (``transferFinished(_:_:)``): the transfer hands its outcome here, on the loop
///    thread. What follows it — metrics, the easy handle back to its pool, cookies, the next hop, a retry,
///    the task's state machine — runs in the task's ``TransferDelegate/proceed(after:)``, on the loop thread
///    itself when it was the session's only transfer in flight, else on the session's transport queue (or
///    the completion lane, for an outcome that can only complete its task: below). No user code runs on
///    the loop thread or the transport queue.
/// 2. **The completion lane** (``complete(_:with:)``): the task's machine decided the outcome completes the
///    task; one delivery takes it to the completion queue, where the session serializes it, runs the
///    completion handler and queues `taskDidComplete`.
///
/// An outcome that can only complete its task — a final response (2xx), no error, no cookies to store —
/// leads to nothing another task or a later hop waits for: no hop, retry or connectivity wait can follow
/// it. While other transfers of the session are in flight, such an outcome skips the transport queue and is
/// followed up on the completion lane, in the block that then runs its completion (on a serial completion
/// queue the session owns). What waits there is its own bookkeeping, behind the completion handlers queued
/// before it, as its own completion handler would: the task stays `running` until then (so a `cancel()` or
/// `suspend()` meanwhile still takes effect, as it would a moment before the last byte), and its easy handle
/// goes back to the pool then (new transfers meanwhile make their own). The transport queue stays free for
/// the outcomes that lead somewhere. That spares a thread wake-up per loop iteration in the common case,
/// where a burst of responses completes its tasks.
///
/// So an outcome crosses three layers — the engine's transfer, the task's machine, the session's completion
/// — and makes at most two thread hand-offs: the loop thread to the transport queue (only while other
/// transfers of the session are in flight, and only for an outcome that may lead to another transfer), and
/// to the completion queue. With a completion queue the caller passed in, serialization runs on a global
/// queue first, one more.
final class OutcomeLanes: Sendable {
    /// The session's transport queue's lane: follow-ups of finished transfers, while others are in flight.
    let transport: DeliveryLane
    /// Where completed tasks, and the library's own blocks for the completion queue, wait for it: the
    /// session's own completion queue, or a global queue when the caller passed one. It counts the session's
    /// outstanding transfers, and on the session's own queue keeps that queue's thread awake for a lone
    /// request's completion (``DeliveryLane/awaitNextBatch()``).
    let completion: DeliveryLane
    let engine: Engine

    init(
        sessionIdentifier: Int, completionQueue: DispatchQueue, ownsCompletionQueue: Bool, group: DispatchGroup?,
        engine: Engine
    ) {
        self.completion = DeliveryLane(
            queue: ownsCompletionQueue ? completionQueue : SessionTask.hopQueue, group: group,
            isSerial: ownsCompletionQueue, waitsForNextBatch: ownsCompletionQueue)
        self.transport = DeliveryLane(
            queue: DispatchQueue(label: "herald.session.\(sessionIdentifier).transport"), group: nil,
            isSerial: true)
        self.engine = engine
    }

    /// A transfer of the session is about to start (or a cached response stands in for one): its outcome
    /// will come through ``transferFinished(_:_:)``. Any thread.
    func transferStarted() {
        completion.transferStarted()
    }

    /// The transfer `delegate` ran ended with `outcome`: on the loop thread (or where a fresh cached
    /// response stood in for a transfer). When it was the session's only transfer in flight, the loop
    /// thread runs what follows at once: nothing else of the session waits for the loop, and a request sent
    /// one at a time then costs two thread hand-offs (to the loop and back to the completion queue), not
    /// three. With others in flight, an outcome that can only complete its task
    /// (``onlyCompletesItsTask(_:)``) goes to the completion lane, where what follows it runs in the block
    /// that runs its completion; any other goes to the transport queue. Either way it is batched with the
    /// loop iteration's other finished transfers into one dispatch per lane, so that the loop thread, which
    /// every transfer of the engine shares, spends its time on transfers.
    func transferFinished(_ delegate: any TransferDelegate, _ outcome: TransferOutcome) {
        guard engine.isOnLoopThread else {
            engine.handOver(.finishedTransfer(self, delegate, outcome), to: transport)
            return
        }
        if completion.outstandingTransfers == 1 {
            proceed(delegate, after: outcome)
        } else if completion.isSerial, Self.onlyCompletesItsTask(outcome) {
            engine.handOver(.finishedTransfer(self, delegate, outcome), to: completion)
        } else {
            engine.handOver(.finishedTransfer(self, delegate, outcome), to: transport)
        }
    }

    /// Whether all that can follow `outcome` is its task's completion, whatever the task and the session:
    /// a final response (2xx) with no error leads to no redirect, authentication round-trip, retry or wait
    /// for connectivity, and one without a `Set-Cookie` field changes nothing the session's other transfers
    /// read. Loop thread: a few comparisons and one pass over the response's fields.
    static func onlyCompletesItsTask(_ outcome: TransferOutcome) -> Bool {
        guard outcome.error == nil, let response = outcome.response, (200..<300).contains(response.statusCode)
        else { return false }
        return !response.headers.contains("Set-Cookie")
    }

    /// Runs what follows a finished transfer (``TransferDelegate/proceed(after:)``), then counts the transfer
    /// done with: from a transport batch, when the batch ends, after the completions it made are handed to
    /// the completion lane. Until then the completion queue counts it as outstanding, so its thread doesn't
    /// wait awake for the loop thread while the transfer's completion is still on the transport lane. In a
    /// batch of the completion lane, the completion it makes is kept for that batch's end.
    func proceed(_ delegate: any TransferDelegate, after outcome: TransferOutcome) {
        completion.followUp { delegate.proceed(after: outcome) }
        if !transport.deferTransferProceeded(for: completion) { completion.transfersProceeded() }
    }

    /// The one delivery of a completed task's outcome to the completion lane. From a transport batch, the
    /// batch's completions go together, in one block; from a follow-up in a batch of the completion lane
    /// itself, they run at that batch's end, in the same block.
    func complete(_ task: SessionTask, with outcome: TransferOutcome) {
        let delivery = Delivery.completion(task, outcome)
        if transport.deferUntilBatchEnds(delivery, to: completion) { return }
        if completion.deferUntilBatchEnds(delivery, to: completion) { return }
        engine.handOver(delivery, to: completion)
    }
}
