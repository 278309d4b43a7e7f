import Foundation
import Herald
import HeraldNotifications

/// Records every Herald lifecycle notification posted on a center, in order, so a test can assert the
/// exact timeline — and fail on any extra event.
///
/// Observes with `.posting` delivery, so events are recorded on the session's event queue in the order
/// they were posted. Use ``waitUntil(timeout:_:)`` (or ``waitForCompletions(_:timeout:)``) to await
/// events without sleeping: it returns as soon as the condition holds and throws when the timeout
/// passes first.
public final class RecordingObserver: Sendable {
    /// Which notification an event was.
    public enum Kind: String, Sendable, Hashable, CustomStringConvertible {
        /// `taskDidResume`.
        case resume
        /// `taskDidSuspend`.
        case suspend
        /// `taskDidComplete`.
        case complete
        /// `sessionDidInvalidate`.
        case invalidate
        /// `downloadDidFailToMoveFile`.
        case moveFailed
        /// `taskWillRetry`.
        case retry
        /// `taskIsWaitingForConnectivity`.
        case waiting
        /// `taskDidEndWaitingForConnectivity`.
        case waitEnded
        /// `connectionDidChangeState`, recorded only when asked for (``init(center:recordsConnections:)``).
        case connection

        /// The kind's name.
        public var description: String { rawValue }
    }

    /// One recorded notification.
    public struct Event: Sendable, CustomStringConvertible {
        /// Which notification it was.
        public let kind: Kind
        /// The task it was about; `nil` for `sessionDidInvalidate`.
        public let taskIdentifier: Int?
        /// The session it came from.
        public let sessionIdentifier: Int
        /// The completion payload, for `taskDidComplete`.
        public let completion: TaskCompletion?
        /// The move-failure payload, for `downloadDidFailToMoveFile`.
        public let moveFailure: DownloadMoveFailure?
        /// The retry payload, for `taskWillRetry`.
        public let retry: TaskRetry?
        /// The wait's payload, for `taskIsWaitingForConnectivity` and `taskDidEndWaitingForConnectivity`.
        public let connectivityWait: TaskConnectivityWait?
        /// The change, for `connectionDidChangeState`.
        public let connectionChange: ConnectionStateChange?

        init(
            kind: Kind, taskIdentifier: Int?, sessionIdentifier: Int, completion: TaskCompletion? = nil,
            moveFailure: DownloadMoveFailure? = nil, retry: TaskRetry? = nil,
            connectivityWait: TaskConnectivityWait? = nil, connectionChange: ConnectionStateChange? = nil
        ) {
            self.kind = kind
            self.taskIdentifier = taskIdentifier
            self.sessionIdentifier = sessionIdentifier
            self.completion = completion
            self.moveFailure = moveFailure
            self.retry = retry
            self.connectivityWait = connectivityWait
            self.connectionChange = connectionChange
        }

        /// `"resume#3"`, `"retry#3"`, `"waiting#3"`, `"complete#3"`, `"moveFailed#3"`, `"invalidate"`, and for a
        /// connection its number and new state, `"connection1:idle"`.
        public var description: String {
            if let connectionChange {
                return "connection\(connectionChange.connectionIdentifier):\(connectionChange.state.rawValue)"
            }
            return taskIdentifier.map { "\(kind)#\($0)" } ?? kind.rawValue
        }
    }

    /// The timeout ran out before the awaited condition held.
    public struct TimeoutError: Error, CustomStringConvertible {
        /// The events recorded when the timeout ran out.
        public let events: [String]
        /// What the timeout looked like.
        public var description: String { "timed out; recorded so far: \(events)" }
    }

    private struct Waiter {
        let id: Int
        let condition: @Sendable ([Event]) -> Bool
        let continuation: CheckedContinuation<[Event], any Error>
    }

    private struct State {
        var events: [Event] = []
        var waiters: [Waiter] = []
        var nextWaiterID = 0
    }

    private let state = Locked(State())
    private let tokens = Locked<[ObservationToken]>([])

    /// Starts recording every lifecycle notification posted on `center`.
    /// - Parameters:
    ///   - center: The center to observe; give each test its own so parallel tests don't mix.
    ///   - recordsConnections: Also records `connectionDidChangeState`, as ``Kind/connection`` events. Off by
    ///     default, so that a task's timeline is the same whatever its connections do.
    public init(center: NotificationHub, recordsConnections: Bool = false) {
        let resume = center.addObserver(for: .taskDidResume) { [weak self] note in
            self?.record(
                Event(
                    kind: .resume, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, completion: nil))
        }
        let suspend = center.addObserver(for: .taskDidSuspend) { [weak self] note in
            self?.record(
                Event(
                    kind: .suspend, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, completion: nil))
        }
        let complete = center.addObserver(for: .taskDidComplete) { [weak self] note in
            self?.record(
                Event(
                    kind: .complete, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, completion: note.userInfo))
        }
        let invalidate = center.addObserver(for: .sessionDidInvalidate) { [weak self] note in
            self?.record(
                Event(
                    kind: .invalidate, taskIdentifier: nil,
                    sessionIdentifier: note.userInfo.sessionIdentifier, completion: nil))
        }
        let moveFailed = center.addObserver(for: .downloadDidFailToMoveFile) { [weak self] note in
            self?.record(
                Event(
                    kind: .moveFailed, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, moveFailure: note.userInfo))
        }
        let retry = center.addObserver(for: .taskWillRetry) { [weak self] note in
            self?.record(
                Event(
                    kind: .retry, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, retry: note.userInfo))
        }
        let waiting = center.addObserver(for: .taskIsWaitingForConnectivity) { [weak self] note in
            self?.record(
                Event(
                    kind: .waiting, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, connectivityWait: note.userInfo))
        }
        let waitEnded = center.addObserver(for: .taskDidEndWaitingForConnectivity) { [weak self] note in
            self?.record(
                Event(
                    kind: .waitEnded, taskIdentifier: note.userInfo.taskIdentifier,
                    sessionIdentifier: note.userInfo.sessionIdentifier, connectivityWait: note.userInfo))
        }
        let connection =
            recordsConnections
            ? [
                center.addObserver(for: .connectionDidChangeState) { [weak self] note in
                    self?.record(
                        Event(
                            kind: .connection, taskIdentifier: nil, sessionIdentifier: note.userInfo.sessionIdentifier,
                            connectionChange: note.userInfo))
                }
            ] : []
        tokens.withLock {
            $0 = [resume, suspend, complete, invalidate, moveFailed, retry, waiting, waitEnded] + connection
        }
    }

    /// Every event recorded so far, in order.
    public var events: [Event] { state.withLock { $0.events } }

    /// The recorded timeline as strings, such as `["resume#1", "complete#1"]`.
    public var timeline: [String] { events.map(\.description) }

    /// The kinds recorded for one task, in order.
    public func timeline(ofTask taskIdentifier: Int) -> [Kind] {
        events.filter { $0.taskIdentifier == taskIdentifier }.map(\.kind)
    }

    /// The completion payloads recorded so far, in order.
    public var completions: [TaskCompletion] { events.compactMap(\.completion) }

    /// The connection changes recorded so far, in order (with ``init(center:recordsConnections:)``).
    public var connectionChanges: [ConnectionStateChange] { events.compactMap(\.connectionChange) }

    /// Stops recording.
    public func cancel() {
        // Outside the lock: `cancel()` may wait for a handler running on another thread, which records
        // under the same lock.
        let taken = tokens.withLock { $0 }
        for token in taken { token.cancel() }
    }

    /// Waits until `condition` holds for the events recorded, and returns them.
    /// - Throws: ``TimeoutError`` when `timeout` passes first.
    @discardableResult
    public func waitUntil(
        timeout: Duration = .seconds(10), _ condition: @escaping @Sendable ([Event]) -> Bool
    ) async throws -> [Event] {
        let id = state.withLock { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> [Event]? in
                if condition(state.events) { return state.events }
                state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            // Started only once the waiter is registered, so the deadline can never be missed.
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(waiter: id)
            }
        }
    }

    /// Waits until `count` `taskDidComplete` events have been recorded.
    @discardableResult
    public func waitForCompletions(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [Event] {
        try await waitUntil(timeout: timeout) { events in events.filter { $0.kind == .complete }.count >= count }
    }

    /// Waits until `sessionDidInvalidate` has been recorded.
    @discardableResult
    public func waitForInvalidation(timeout: Duration = .seconds(10)) async throws -> [Event] {
        try await waitUntil(timeout: timeout) { events in events.contains { $0.kind == .invalidate } }
    }

    private func record(_ event: Event) {
        let ready = state.withLock { state -> [(CheckedContinuation<[Event], any Error>, [Event])] in
            state.events.append(event)
            let events = state.events
            var ready: [(CheckedContinuation<[Event], any Error>, [Event])] = []
            state.waiters.removeAll { waiter in
                guard waiter.condition(events) else { return false }
                ready.append((waiter.continuation, events))
                return true
            }
            return ready
        }
        for (continuation, events) in ready { continuation.resume(returning: events) }
    }

    private func expire(waiter id: Int) {
        let expired = state.withLock { state -> (CheckedContinuation<[Event], any Error>, [String])? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiters.remove(at: index)
            return (waiter.continuation, state.events.map(\.description))
        }
        if let (continuation, events) = expired { continuation.resume(throwing: TimeoutError(events: events)) }
    }
}
