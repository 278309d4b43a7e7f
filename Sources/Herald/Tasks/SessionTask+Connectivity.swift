import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import HeraldEngine

// Waiting for a network (`SessionConfiguration.waitsForConnectivity`). An attempt that failed before any
// response arrived, while the kernel has no route for it, doesn't fail the task: the task goes between
// transfers, as for a retry, and waits for the routing monitor to see a route; then the attempt starts again.
// Each wait is announced with `taskIsWaitingForConnectivity`, and its end, when a network comes back, with
// `taskDidEndWaitingForConnectivity`: effects of the transitions, carried out in order with the task's others, so
// they land between the task's `taskDidResume` and its `taskDidComplete`.
extension SessionTask {
    /// The failures that can mean "no network": nothing was answered, and there may have been no route.
    static let connectivityFailures: Set<HeraldError.Code> = [.cannotConnect, .cannotFindHost, .networkConnectionLost]

    /// Whether an attempt of `method` that failed with `code` may wait for a network and be made again. A lost
    /// connection may have carried the whole request, which the server may have acted on: only a request that
    /// can be made twice (an idempotent method, RFC 9110) is made again after one; any request after a failure
    /// to connect or to find the host, which sent nothing.
    ///
    /// The attempt starts again from its first request, `attemptMethod`'s: when a hop before the failed one was
    /// answered (`earlierHopAnswered`: a redirect, a challenge), the server may have acted on that request, so
    /// it too must be one that can be made twice. A `POST` answered with a `303` whose `GET` then finds no
    /// network fails the task rather than post again.
    static func waitsForConnectivity(
        method: String, after code: HeraldError.Code, attemptMethod: String, earlierHopAnswered: Bool
    ) -> Bool {
        guard connectivityFailures.contains(code) else { return false }
        if earlierHopAnswered, !Transfer.idempotentMethods.contains(attemptMethod.uppercased()) { return false }
        return code != .networkConnectionLost
            || Transfer.idempotentMethods.contains(method.uppercased())
    }

    /// Whether `outcome`, a failed attempt, makes the task wait for a network; if so the task does not
    /// complete now. On the loop thread, after the transfer ended.
    func beginWaitingForConnectivity(after outcome: TaskOutcome) -> Bool {
        guard session.configuration.waitsForConnectivity, !outcome.isFromCache, outcome.response == nil,
            let failure = outcome.error, canTryAgain
        else { return false }
        let (current, earlierHopAnswered, attemptRequest) = machine {
            ($0.currentTransfer, !$0.hops.visited.isEmpty, $0.hops.attemptRequest)
        }
        guard let transfer = current,
            Self.waitsForConnectivity(
                method: transfer.request.method, after: failure.code,
                attemptMethod: (attemptRequest ?? originalRequest).method, earlierHopAnswered: earlierHopAnswered)
        else { return false }
        let target = ReachabilityTarget(
            url: transfer.request.url, proxy: transfer.request.proxy,
            proxyFromEnvironment: transfer.proxyFromEnvironment)
        // A route exists: the failure is the server's (refused, unknown name), not the network's — unless the
        // connection failed for want of a route and the route came back since: then the task's first wait ends at
        // once (`whenReachable` runs it) and the attempt starts again. Only the first, so a kernel that keeps
        // refusing a route the table shows can't make a task retry without end.
        let hadNoRoute =
            (failure.underlying as? POSIXError)?.code == .ENETUNREACH
            && machine({ $0.hops.connectivityWaits }) == 0
        guard let query = try? NetlinkQuery(), let table = try? query.readTable(),
            let now = try? query.status(of: target, in: table), !now.isReachable || hadNoRoute,
            let monitor = ConnectivityMonitors.monitor(for: session.engine)
        else { return false }
        let wait = ConnectivityWait()
        let timer = DispatchWorkItem { [weak self] in
            guard wait.end() else { return }
            self?.startAttemptAfterWaiting(failure: failure)
        }
        let resourceTimeout = session.configuration.timeoutIntervalForResource
        let began = transition({ $0.connectivityWaitBegins(timer, after: outcome.metrics) }) {
            action, _ -> (ContinuousClock.Instant?, [TaskEffect]) in
            switch action {
            case .complete: (nil, [])
            case .announceAndWait(let since): (since ?? .now, [.announceConnectivityWait(self, failure)])
            }
        }
        guard let started = began else { return false }
        let held = HeldWorkItem(item: timer)
        let queue = hookQueue
        session.engine.execute { monitor.whenReachable(target, run: held.item, on: queue) }
        if resourceTimeout > 0 {
            let left = max(0, Self.timeLeft(of: resourceTimeout, since: started) ?? resourceTimeout)
            hookQueue.asyncAfter(deadline: .now() + min(left, Self.maximumRetryDelay)) { [weak self] in
                guard wait.end() else { return }
                held.item.cancel()
                self?.connectivityWaitTimedOut(failure: failure, timeout: resourceTimeout)
            }
        }
        return true
    }

    /// A network came back: the attempt starts again, through the adapter when there is an interceptor.
    /// Hook queue.
    private func startAttemptAfterWaiting(failure: HeraldError) {
        // The wait is over: an effect of a transition, so it lands after its announcement and before the
        // completion.
        transition({ $0.taskState != .completed }) { announces, _ in
            ((), announces ? [TaskEffect.announceConnectivityWaitEnded(self, failure)] : [])
        }
        // The wait's own timer ended with it: the resource timeout goes on covering what comes before the next
        // transfer (the adapter, which may hang on a token refresh), as it does between a retry's attempts.
        armResourceDeadline()
        let shared = session.interceptor
        let own = interceptor
        if let interceptor = Self.combined(own, shared) { return startAttempt(with: interceptor, afterWait: true) }
        let request = machine { $0.hops.attemptRequest } ?? originalRequest
        guard case .start(_, let validators) = transition({ $0.attemptStarts(with: request) }) else { return }
        var transfer = attemptTransferRequest(for: request, validators: validators)
        // The failed attempt may have read some of a streamed body: it is sent again from its start.
        if let bodyFailure = rewindBody(of: &transfer) {
            return finishHop(
                TaskOutcome(response: nil, body: Data(), error: bodyFailure, metrics: nil), error: bodyFailure)
        }
        startTransfer(transfer)
    }

    /// No network came back within the resource timeout: the task fails with `timedOut`. Hook queue.
    private func connectivityWaitTimedOut(failure: HeraldError, timeout: TimeInterval) {
        let error = HeraldError(
            .timedOut,
            "No network came back within the session's resource timeout (\(timeout) s) while the task waited for "
                + "connectivity; the last attempt failed with: \(failure.message)",
            underlying: failure, url: originalRequest.url)
        finishHop(TaskOutcome(response: nil, body: Data(), error: error, metrics: nil), error: error)
    }
}

/// One wait for a network, ended once: by the network coming back or by the resource timeout, whichever is
/// first.
final class ConnectivityWait: Sendable {
    private let ended = Atomic<Bool>(false)

    /// Ends the wait; `false` when it had already ended.
    func end() -> Bool {
        ended.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// A work item handed across threads: libdispatch makes running, cancelling and querying one safe from any
/// thread, but `DispatchWorkItem` is not annotated `Sendable`.
struct HeldWorkItem: @unchecked Sendable {
    // Safety: only `DispatchWorkItem`'s own thread-safe operations are used (`perform` through a queue,
    // `cancel`, `isCancelled`).
    let item: DispatchWorkItem
}

/// The routing monitor each engine's waiting tasks share, opened with the first wait and kept for the engine's
/// life (engines live as long as the process): zero CPU while nothing changes.
enum ConnectivityMonitors {
    private static let monitors = Locked<[ObjectIdentifier: RoutingMonitor]>([:])

    /// `engine`'s monitor, opened and started on first use; `nil` when the kernel refuses a netlink socket.
    static func monitor(for engine: Engine) -> RoutingMonitor? {
        monitors.withLock { monitors in
            if let monitor = monitors[ObjectIdentifier(engine)] { return monitor }
            guard let monitor = try? RoutingMonitor(target: .anyNetwork, debounce: 0, engine: engine) else {
                return nil
            }
            monitors[ObjectIdentifier(engine)] = monitor
            engine.execute { monitor.start(reporting: nil) }
            return monitor
        }
    }
}

extension SessionEventPoster {
    /// Queues `taskIsWaitingForConnectivity`, or `taskDidEndWaitingForConnectivity` when the wait `ended`, on
    /// the event queue: an effect of the task's transition, carried out in order with its others, after its
    /// resume and before anything can complete it.
    func postConnectivityWait(of task: SessionTask, error: HeraldError, ended: Bool = false) {
        let name: NotificationName<TaskConnectivityWait> =
            ended ? .taskDidEndWaitingForConnectivity : .taskIsWaitingForConnectivity
        guard center.hasObservers(for: name) else { return }
        let subject = task.lifecycleSubject
        let payload = TaskConnectivityWait(
            taskIdentifier: subject.taskIdentifier, sessionIdentifier: sessionIdentifier,
            request: task.requestSummary, date: Date(), error: error)
        let center = center
        async { center.post(name, object: subject, userInfo: payload) }
    }
}
