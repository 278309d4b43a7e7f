import HeraldNotifications
extension TransferProgress {
    /// The counts of a ``TransferProgress`` at one moment.
    public struct Snapshot: Sendable, Hashable, CustomStringConvertible {
        /// The number of bytes transferred so far.
        public var completedUnitCount: Int64
        /// The number of bytes expected in all, or -1 when unknown.
        public var totalUnitCount: Int64

        /// Creates a snapshot.
        /// - Parameters:
        ///   - completedUnitCount: The bytes transferred so far.
        ///   - totalUnitCount: The bytes expected in all, or -1 when unknown.
        public init(completedUnitCount: Int64, totalUnitCount: Int64) {
            self.completedUnitCount = completedUnitCount
            self.totalUnitCount = totalUnitCount
        }

        /// Whether the total is unknown.
        public var isIndeterminate: Bool { totalUnitCount < 0 }

        /// The fraction done, from 0 to 1; 0 while the total is unknown.
        public var fractionCompleted: Double {
            guard totalUnitCount > 0 else { return 0 }
            return min(1, Double(completedUnitCount) / Double(totalUnitCount))
        }

        /// `completed/total`, with `?` for an unknown total.
        public var description: String {
            "\(completedUnitCount)/\(isIndeterminate ? "?" : String(totalUnitCount))"
        }
    }

    /// The current counts.
    public var snapshot: Snapshot {
        Snapshot(completedUnitCount: completedUnitCount, totalUnitCount: totalUnitCount)
    }

    /// An `AsyncSequence` of one direction of a task's progress; see ``SessionTask/downloadProgressUpdates``.
    ///
    /// It keeps only the newest snapshot a slow consumer has not read yet (progress is a level, not a list of
    /// events), never yields the same snapshot twice in a row, and finishes when the task completes.
    public struct Updates: AsyncSequence, Sendable {
        /// Each element is the progress at one moment.
        public typealias Element = Snapshot
        /// The sequence never throws: a failed or cancelled task just finishes it.
        public typealias Failure = Never

        let stream: AsyncStream<Snapshot>

        /// Creates the iterator. The sequence is meant for one consumer: several iterators share its
        /// elements, each snapshot going to one of them.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: stream.makeAsyncIterator())
        }

        /// Iterates over the snapshots.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<Snapshot>.AsyncIterator

            /// The next snapshot, or `nil` once the task has completed and the last snapshot was read.
            public mutating func next() async -> Snapshot? {
                await base.next()
            }

            /// The next snapshot, or `nil` once the task has completed and the last snapshot was read;
            /// runs on `actor`'s executor.
            public mutating func next(isolation actor: isolated (any Actor)?) async -> Snapshot? {
                await base.next(isolation: actor)
            }
        }
    }
}

extension SessionTask {
    /// The request body's progress as an `AsyncSequence`: see ``downloadProgressUpdates``.
    public var uploadProgressUpdates: TransferProgress.Updates { makeProgressUpdates(upload: true) }

    /// The response body's progress as an `AsyncSequence` of snapshots that finishes when the task completes.
    ///
    /// Snapshots are taken on the session's ``SessionManager/completionQueue`` alongside the task's progress
    /// handlers (coalesced the same way; pushed, never polled), so with the default serial queue they come in
    /// order. The last snapshot is the final count, yielded just before the sequence finishes, when the
    /// task's completion handler runs (before `taskDidComplete`): equal to the total after a complete
    /// transfer, short of it after cancellation or a failure. The buffer holds only the newest unread
    /// snapshot, so a slow consumer skips intermediate values but always sees the final one.
    ///
    /// Ask for it before or while the task runs; asked after completion, it yields the final count and
    /// finishes at once. A sequence whose consumer stops iterating (or is cancelled) just stops receiving;
    /// it costs a closure call per progress update until the task completes. It never finishes for a task
    /// that is never resumed or cancelled. Counts go down when bytes are moved again: an upload body rewound
    /// and sent again (a 307, an authentication round-trip), and the response of a retry's attempt, which counts
    /// from its own start.
    public var downloadProgressUpdates: TransferProgress.Updates { makeProgressUpdates(upload: false) }

    private func makeProgressUpdates(upload: Bool) -> TransferProgress.Updates {
        let progress = upload ? uploadProgress : downloadProgress
        let (stream, continuation) = AsyncStream.makeStream(
            of: TransferProgress.Snapshot.self, bufferingPolicy: .bufferingNewest(1))
        let forwarder = ProgressForwarder(continuation)
        // The handlers are chained under the task's lock. The state machine reaches `completed` under this
        // lock before the completion handler is taken (also under it), so a task not yet completed here will
        // run the chained completion handler. A completed one may already have run it, but its transfer has
        // stopped reporting bytes, so its counts are final and the sequence can end now.
        let added = transition {
            $0.progressObserverAdded(
                upload: upload, onProgress: { progress in forwarder.yield(progress.snapshot) },
                // The transfer has finished by now, so this count is final.
                onCompletion: { forwarder.finish(with: progress.snapshot) })
        }
        switch added {
        case .added: break
        case .finishNow: forwarder.finish(with: progress.snapshot)
        }
        return TransferProgress.Updates(stream: stream)
    }
}

/// Feeds one ``TransferProgress/Updates`` stream, dropping repeats of the last snapshot.
private final class ProgressForwarder: Sendable {
    private let continuation: AsyncStream<TransferProgress.Snapshot>.Continuation
    private let last = Locked<TransferProgress.Snapshot?>(nil)

    init(_ continuation: AsyncStream<TransferProgress.Snapshot>.Continuation) {
        self.continuation = continuation
    }

    func yield(_ snapshot: TransferProgress.Snapshot) {
        let isNew = last.withLock { last -> Bool in
            guard last != snapshot else { return false }
            last = snapshot
            return true
        }
        // Yielding outside the lock: it may resume the consumer inline.
        if isNew { continuation.yield(snapshot) }
    }

    func finish(with snapshot: TransferProgress.Snapshot) {
        yield(snapshot)
        continuation.finish()
    }
}
