import NIOCore
import Herald
import HeraldNotifications

/// The shared, lock-protected state of one ``TestServer``: its connections, its request records and its byte
/// counters, plus the tasks waiting for a condition over them.
///
/// Channel handlers call in from event-loop threads and tests read from any task, so every access goes through
/// one lock (a pthread mutex, which ThreadSanitizer understands; `Synchronization.Mutex` gives it false
/// races under contention). Waiters are resumed after the lock is released.
final class RequestRecorder: Sendable {
    private struct Waiter {
        var condition: @Sendable (TestServerStatistics) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Storage {
        var requests: [RecordedRequest] = []
        var channels: [ObjectIdentifier: any Channel] = [:]
        var acceptedConnections = 0
        var bodyBytesSent = 0
        var bytesSent = 0
        var peakQueuedBodyBytes = 0
        var sendBlockedCount = 0
        var isShutDown = false
        var nextWaiterID = 0
        var waiters: [Int: Waiter] = [:]

        var statistics: TestServerStatistics {
            TestServerStatistics(
                requestCount: requests.count,
                openConnections: channels.count,
                acceptedConnections: acceptedConnections,
                bodyBytesSent: bodyBytesSent,
                bytesSent: bytesSent,
                sendBlockedCount: sendBlockedCount,
                requests: requests
            )
        }
    }

    private let storage = Locked(Storage())

    var statistics: TestServerStatistics {
        storage.withLock { $0.statistics }
    }

    /// The largest number of response body bytes one streaming response had queued in NIO but not yet written.
    var peakQueuedBodyBytes: Int {
        storage.withLock { $0.peakQueuedBodyBytes }
    }

    // MARK: Connections

    /// Registers a new connection; returns `false` if the server is already shutting down.
    func connectionOpened(_ channel: any Channel) -> Bool {
        update { storage in
            guard !storage.isShutDown else { return false }
            storage.channels[ObjectIdentifier(channel)] = channel
            storage.acceptedConnections += 1
            return true
        }
    }

    func connectionClosed(_ channel: any Channel) {
        update { storage in
            storage.channels[ObjectIdentifier(channel)] = nil
            for index in storage.requests.indices where !storage.requests[index].isComplete {
                if storage.requests[index].connectionID == ObjectIdentifier(channel) {
                    storage.requests[index].isComplete = true
                }
            }
        }
    }

    /// Marks the server as shut down and returns the connections that were still open.
    func beginShutdown() -> [any Channel] {
        storage.withLock { storage in
            storage.isShutDown = true
            return Array(storage.channels.values)
        }
    }

    // MARK: Requests

    func requestReceived(
        on channel: any Channel,
        method: String,
        uri: String,
        path: String,
        headers: [(name: String, value: String)]
    ) -> Int {
        update { storage in
            let sequenceNumber = storage.requests.count
            var record = RecordedRequest(
                sequenceNumber: sequenceNumber,
                method: method,
                uri: uri,
                path: path,
                headers: headers,
                bodyByteCount: 0,
                responseStatus: nil,
                bodyBytesSent: 0,
                isComplete: false,
                receivedAt: .now
            )
            record.connectionID = ObjectIdentifier(channel)
            storage.requests.append(record)
            return sequenceNumber
        }
    }

    func requestBodyReceived(_ sequenceNumber: Int, byteCount: Int) {
        update { $0.requests[sequenceNumber].bodyByteCount += byteCount }
    }

    func responseStarted(_ sequenceNumber: Int, status: Int) {
        let now = ContinuousClock.now
        update { storage in
            storage.requests[sequenceNumber].responseStatus = status
            storage.requests[sequenceNumber].responseStartedAt = now
        }
    }

    func bodyBytesSent(_ sequenceNumber: Int, byteCount: Int) {
        update { storage in
            storage.requests[sequenceNumber].bodyBytesSent += byteCount
            storage.bodyBytesSent += byteCount
        }
    }

    func responseCompleted(_ sequenceNumber: Int) {
        update { $0.requests[sequenceNumber].isComplete = true }
    }

    func bytesSent(_ byteCount: Int) {
        update { $0.bytesSent += byteCount }
    }

    /// A streaming response found its connection unwritable and waits for the client to read.
    func sendBlocked() {
        update { $0.sendBlockedCount += 1 }
    }

    func queuedBodyBytes(_ byteCount: Int) {
        storage.withLock { $0.peakQueuedBodyBytes = max($0.peakQueuedBodyBytes, byteCount) }
    }

    // MARK: Waiting

    /// Suspends until `condition` holds for the server's statistics, or fails after `timeout`.
    ///
    /// `condition` is evaluated without the lock held, after every change to the statistics.
    func wait(
        timeout: Duration,
        until condition: @escaping @Sendable (TestServerStatistics) -> Bool
    ) async throws {
        let id = storage.withLock { storage in
            storage.nextWaiterID += 1
            return storage.nextWaiterID
        }
        let timeoutTask = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.resumeWaiter(id, with: .failure(TestServerError.timedOut(after: timeout)))
        }
        defer { timeoutTask.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Register first, then check: a change racing with registration is seen by one of the two checks.
                let snapshot = storage.withLock { storage in
                    storage.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return storage.statistics
                }
                if condition(snapshot) { resumeWaiter(id, with: .success(())) }
            }
        } onCancel: {
            resumeWaiter(id, with: .failure(CancellationError()))
        }
    }

    private func resumeWaiter(_ id: Int, with result: Result<Void, any Error>) {
        let waiter = storage.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(with: result)
    }

    /// Applies `body` under the lock, then, with the lock released, resumes waiters whose condition now holds.
    private func update<Value>(_ body: (inout Storage) -> Value) -> Value {
        let (result, waiters, snapshot) = storage.withLock { storage -> (Value, [Int: Waiter], TestServerStatistics?) in
            let result = body(&storage)
            guard !storage.waiters.isEmpty else { return (result, [:], nil) }
            return (result, storage.waiters, storage.statistics)
        }
        if let snapshot {
            for (id, waiter) in waiters where waiter.condition(snapshot) {
                resumeWaiter(id, with: .success(()))
            }
        }
        return result
    }
}
