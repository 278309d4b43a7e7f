import HeraldNotifications

/// What a ``SessionObserver``'s registration leaves open when its token is cancelled or released: the tasks it
/// announced as resumed whose completion it will now never deliver, and the sessions whose connection changes it
/// delivered. Given to ``SessionObserver/observationDidEnd(_:)``, so that an observer kept alive after its token
/// can take back what it counts for them (a running request, an open span, an open connection).
public struct ObservationEnd: Sendable {
    /// A task, by its session's and its own identifier.
    public struct OpenTask: Hashable, Sendable {
        /// The owning session's identifier.
        public let sessionIdentifier: Int
        /// The task's identifier within its session.
        public let taskIdentifier: Int

        /// Creates a task's identity.
        /// - Parameters:
        ///   - sessionIdentifier: The owning session's identifier.
        ///   - taskIdentifier: The task's identifier within its session.
        public init(sessionIdentifier: Int, taskIdentifier: Int) {
            self.sessionIdentifier = sessionIdentifier
            self.taskIdentifier = taskIdentifier
        }
    }

    /// The tasks whose `taskDidResume` the registration delivered, with no `taskDidComplete` or
    /// `sessionDidInvalidate` of theirs delivered after it.
    public let openTasks: Set<OpenTask>
    /// The sessions whose `connectionDidChangeState` the registration delivered, not invalidated since.
    public let connectionSessions: Set<Int>

    /// Creates an end; Herald creates these itself, the initializer is public so observers can be unit-tested.
    /// - Parameters:
    ///   - openTasks: The tasks left open.
    ///   - connectionSessions: The sessions whose connections were announced.
    public init(openTasks: Set<OpenTask>, connectionSessions: Set<Int>) {
        self.openTasks = openTasks
        self.connectionSessions = connectionSessions
    }
}

/// What one registration of a ``SessionObserver`` delivered and what closed it, for its
/// ``ObservationEnd``. Updated inside the delivered calls, so what was posted and discarded at the cancel
/// (a `.queue` observer's pending calls) counts as never delivered.
///
/// A resume or a connection change being delivered when the registration ends (on another session's queue,
/// while a handler ends the token without waiting for other threads) is seen through: the end is told once the
/// last such call has returned, so the observer takes back what that call adds too.
final class DeliveredTasks: Sendable {
    private struct State {
        var open: Set<ObservationEnd.OpenTask> = []
        var connectionSessions: Set<Int> = []
        var hasEnded = false
        /// Resumes and connection changes let through and not yet returned from.
        var callsUnderWay = 0
        /// Whether the end waits for ``callsUnderWay`` to reach 0.
        var owesEnd = false

        var end: ObservationEnd { ObservationEnd(openTasks: open, connectionSessions: connectionSessions) }
    }

    private let state = Locked(State())

    /// A resume is about to be delivered; `false` once the registration has ended: it is not delivered then.
    /// After `true`, call ``callReturned()`` once the observer's method returns.
    func resumed(session: Int, task: Int) -> Bool {
        state.withLock { state in
            guard !state.hasEnded else { return false }
            state.open.insert(ObservationEnd.OpenTask(sessionIdentifier: session, taskIdentifier: task))
            state.callsUnderWay += 1
            return true
        }
    }

    /// A connection change is about to be delivered; `false` once the registration has ended. After `true`, call
    /// ``callReturned()`` once the observer's method returns.
    func connectionChanging(session: Int) -> Bool {
        state.withLock { state in
            guard !state.hasEnded else { return false }
            state.connectionSessions.insert(session)
            state.callsUnderWay += 1
            return true
        }
    }

    /// A call let through by ``resumed(session:task:)`` or ``connectionChanging(session:)`` returned: the end to
    /// tell now, when the registration ended meanwhile and this was the last call under way.
    func callReturned() -> ObservationEnd? {
        state.withLock { state in
            state.callsUnderWay -= 1
            guard state.owesEnd, state.callsUnderWay == 0 else { return nil }
            state.owesEnd = false
            return state.end
        }
    }

    /// A completion was delivered.
    func completed(session: Int, task: Int) {
        state.withLock { _ = $0.open.remove(ObservationEnd.OpenTask(sessionIdentifier: session, taskIdentifier: task)) }
    }

    /// A session's invalidation was delivered: nothing of it is open any more.
    func invalidated(session: Int) {
        state.withLock { state in
            state.open = state.open.filter { $0.sessionIdentifier != session }
            state.connectionSessions.remove(session)
        }
    }

    /// Ends the registration: what it left open, the first time, unless a call is under way (the last one to
    /// return tells it then, ``callReturned()``); `nil` after.
    func end() -> ObservationEnd? {
        state.withLock { state in
            guard !state.hasEnded else { return nil }
            state.hasEnded = true
            guard state.callsUnderWay == 0 else {
                state.owesEnd = true
                return nil
            }
            return state.end
        }
    }
}
