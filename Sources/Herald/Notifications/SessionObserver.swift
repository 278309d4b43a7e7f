import Dispatch
import HeraldNotifications
import Synchronization

/// A plug-in that observes sessions' lifecycle notifications, with one method per notification.
///
/// Every method has a default implementation that does nothing, so an observer implements only what it
/// needs. Register it in one call with ``HeraldNotifications/NotificationHub/addObserver(_:delivery:)``.
/// Because a method whose signature is slightly off would silently never be called (a known trap with
/// protocols that have default implementations), prefer the closure form for one-off observation and
/// keep the exact signatures below for plug-ins.
public protocol SessionObserver: AnyObject, Sendable {
    /// A task really started or continued.
    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>)
    /// A task really paused.
    func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>)
    /// A task completed, after its completion handler ran.
    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>)
    /// A session finished invalidating.
    func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>)
    /// A finished download could not be moved to its destination; the temporary file is kept.
    func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>)
    /// A task's attempt failed and it will be sent again, between its resume and its completion.
    func taskWillRetry(_ notification: TypedNotification<TaskRetry>)
    /// A task found no network and waits for one, between its resume and its completion.
    func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>)
    /// A network came back for a task that waited for one: its attempt starts again.
    func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>)
    /// A ``NetworkReachability`` monitor posting on this center announced a new status.
    func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>)
    /// One of a session's connections was established, became active or idle, or closed. Called only when
    /// ``observesConnections`` is `true`.
    func connectionDidChangeState(_ notification: TypedNotification<ConnectionStateChange>)
    /// Whether ``HeraldNotifications/NotificationHub/addObserver(_:delivery:)`` registers ``connectionDidChangeState(_:)``. A kept
    /// connection turns active and idle with every request it carries, so these come about twice per request:
    /// an observer hears them only when it asks to, and while none does the sessions make none. Default `false`.
    var observesConnections: Bool { get }
    /// The registration's token was cancelled or released while the observer lives on: nothing more comes
    /// through it, and `end` names what it delivered that nothing will now close (tasks resumed and not
    /// completed, sessions whose connections were announced). Called once, after the registration's other
    /// calls: on the thread that ended the token, or, when a resume or a connection change was being delivered
    /// on another thread then (a token ended inside a handler doesn't wait for other threads), on that thread
    /// once it returns.
    func observationDidEnd(_ end: ObservationEnd)
}

extension SessionObserver {
    /// Does nothing.
    public func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {}
    /// Does nothing.
    public func taskDidSuspend(_ notification: TypedNotification<TaskLifecycleEvent>) {}
    /// Does nothing.
    public func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {}
    /// Does nothing.
    public func sessionDidInvalidate(_ notification: TypedNotification<SessionInvalidation>) {}
    /// Does nothing.
    public func downloadDidFailToMoveFile(_ notification: TypedNotification<DownloadMoveFailure>) {}
    /// Does nothing.
    public func taskWillRetry(_ notification: TypedNotification<TaskRetry>) {}
    /// Does nothing.
    public func taskIsWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {}
    /// Does nothing.
    public func taskDidEndWaitingForConnectivity(_ notification: TypedNotification<TaskConnectivityWait>) {}
    /// Does nothing.
    public func reachabilityDidChange(_ notification: TypedNotification<ReachabilityChange>) {}
    /// Does nothing.
    public func connectionDidChangeState(_ notification: TypedNotification<ConnectionStateChange>) {}
    /// `false`: connection changes are not delivered.
    public var observesConnections: Bool { false }
    /// Does nothing.
    public func observationDidEnd(_ end: ObservationEnd) {}
}

extension NotificationHub {
    /// Registers `observer` for every Herald lifecycle notification posted on this center, for the
    /// reachability changes posted there, and, when its ``SessionObserver/observesConnections`` is `true`, for
    /// the connection changes.
    ///
    /// The observer receives the notifications in the order they were posted, whatever the delivery:
    /// with `.queue(q)` they go through one serial queue targeting `q`, so even on a concurrent queue a
    /// task's `taskDidResume` is never delivered after its `taskDidComplete`.
    ///
    /// - Parameters:
    ///   - observer: The plug-in. It is held strongly until the token is released: cancelling stops the calls,
    ///     and releasing the token lets the plug-in go. A plug-in that keeps its own token must drop it after
    ///     cancelling (`token?.cancel(); token = nil`), or the two keep each other alive.
    ///   - delivery: `.posting` (on the session's event queue, synchronously) or `.queue`.
    /// - Returns: A token; cancel or release it to stop observing. With `.queue`, cancelling waits for a method
    ///   that is running on another thread, as `ObservationToken.cancel()` does for any
    ///   handler: don't cancel while holding what such a method waits for (a lock it takes, a queue it `sync`s
    ///   onto).
    public func addObserver(_ observer: some SessionObserver, delivery: NotificationDelivery = .posting)
        -> ObservationToken
    {
        // `.posting` registers the observer's methods as the handlers themselves; `.queue` wraps each call
        // for the serial queue. (Wrapping on `.posting` too would allocate a closure per notification and
        // copy the payload into it.)
        let serial: DispatchQueue?
        switch delivery {
        case .posting: serial = nil
        case .queue(let queue): serial = DispatchQueue(label: "herald.session-observer", target: queue)
        }
        // What was forwarded to the serial queue but hasn't run when the token is cancelled is discarded, and a
        // method running then is waited for, as the hub does for its own handlers.
        let gate = ForwardingGate()
        func observe<UserInfo: Sendable>(
            _ name: NotificationName<UserInfo>, _ method: @escaping @Sendable (TypedNotification<UserInfo>) -> Void
        ) -> ObservationToken {
            guard let serial else { return addObserver(for: name, method) }
            return addObserver(for: name) { note in
                serial.async { gate.run { NotificationHub.runAsHandler { method(note) } } }
            }
        }
        // `drain()` and `invalidateAndWait` wait for what was forwarded to the serial queue.
        let drainToken = serial.map { [drainAlso($0), ObservationToken(onCancel: gate.close)] } ?? []
        // What this registration left open when its token ends, for `observationDidEnd`.
        let delivered = DeliveredTasks()
        let connections =
            observer.observesConnections
            ? [
                observe(.connectionDidChangeState) { note in
                    guard delivered.connectionChanging(session: note.userInfo.sessionIdentifier) else { return }
                    observer.connectionDidChangeState(note)
                    if let end = delivered.callReturned() { observer.observationDidEnd(end) }
                }
            ] : []
        // The ends before the starts: a task that resumes while the observations are being added, and completes
        // at once, is then never counted as running without its completion being seen.
        let ends = [
            observe(.taskDidComplete) { note in
                delivered.completed(session: note.userInfo.sessionIdentifier, task: note.userInfo.taskIdentifier)
                observer.taskDidComplete(note)
            },
            observe(.sessionDidInvalidate) { note in
                delivered.invalidated(session: note.userInfo.sessionIdentifier)
                observer.sessionDidInvalidate(note)
            },
            observe(.taskDidSuspend) { observer.taskDidSuspend($0) },
        ]
        // Last: a combined token cancels in order, so the observations above are over when the end is told.
        let end = ObservationToken(onCancel: {
            if let end = delivered.end() { observer.observationDidEnd(end) }
        })
        return ObservationToken(
            combining: drainToken + connections + ends + [
                observe(.taskDidResume) { note in
                    guard
                        delivered.resumed(session: note.userInfo.sessionIdentifier, task: note.userInfo.taskIdentifier)
                    else { return }
                    observer.taskDidResume(note)
                    if let end = delivered.callReturned() { observer.observationDidEnd(end) }
                },
                observe(.downloadDidFailToMoveFile) { observer.downloadDidFailToMoveFile($0) },
                observe(.taskWillRetry) { observer.taskWillRetry($0) },
                observe(.taskIsWaitingForConnectivity) { observer.taskIsWaitingForConnectivity($0) },
                observe(.taskDidEndWaitingForConnectivity) { observer.taskDidEndWaitingForConnectivity($0) },
                observe(.reachabilityDidChange) { observer.reachabilityDidChange($0) },
                end,
            ])
    }
}

/// Lets a `.queue` observer's forwarded calls through until its token is cancelled; cancelling waits for a call
/// that is running, unless it comes from a handler (which may be that very call).
private final class ForwardingGate: Sendable {
    private let isOpen = Atomic(true)
    /// Held while a forwarded call runs.
    private let running = Locked(())

    /// Runs `call` unless the gate is closed.
    func run(_ call: () -> Void) {
        running.withLock { _ in
            if isOpen.load(ordering: .acquiring) { call() }
        }
    }

    /// Lets no further call through, and returns once none is running.
    @Sendable func close() {
        isOpen.store(false, ordering: .releasing)
        if !NotificationHub.isHandlerRunningOnCurrentThread { running.withLock { _ in } }
    }
}
