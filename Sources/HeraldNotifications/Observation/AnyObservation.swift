/// The part of an observation a hub needs without knowing its payload type.
///
/// A hub keeps observations of every name in the same structures; when it delivers, the name's index
/// tells it the payload type, so it can downcast to ``Observation`` without a dynamic check.
@usableFromInline
protocol AnyObservation: AnyObject, Sendable {
    /// Registration order within one hub; deliveries to a name follow it.
    var sequenceNumber: UInt64 { get }
    /// The index of the observed name (see `NotificationName.index`).
    var nameIndex: Int { get }
    /// The identity of the observed sender when the observation filters by sender.
    var senderID: ObjectIdentifier? { get }
    /// Whether ``markCancelled()`` has been called.
    var isCancelled: Bool { get }
    /// Stops all future handler calls; returns `true` for the first call only.
    func markCancelled() -> Bool
    /// Whether the observation is delivered on a queue, through its mailbox.
    var isQueued: Bool { get }
    /// Whether a `.queue` drain block is between its cancelled check and the return of the handler.
    var isRunningQueuedHandler: Bool { get }
    /// Makes `barrier` wait until the handler has returned from every notification in the mailbox now.
    ///
    /// - Returns: `false` when there is nothing to wait for (the barrier was not kept).
    func holdUntilHandled(_ barrier: DrainBarrier) -> Bool
}
