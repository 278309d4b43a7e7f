import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing

extension Payloads {
    static func waiting(
        task: Int, session: Int = 1, request: RequestSummary = anyRequest,
        name: NotificationName<TaskConnectivityWait> = .taskIsWaitingForConnectivity
    ) -> TypedNotification<TaskConnectivityWait> {
        TypedNotification(
            name: name, object: nil,
            userInfo: TaskConnectivityWait(
                taskIdentifier: task, sessionIdentifier: session, request: request, date: Date(),
                error: HeraldError(.cannotConnect, "could not connect to the server", url: request.url)))
    }

    static func waitEnded(task: Int, session: Int = 1) -> TypedNotification<TaskConnectivityWait> {
        waiting(task: task, session: session, name: .taskDidEndWaitingForConnectivity)
    }

    static let ethernet = NetworkReachabilityStatus.reachable(NetworkInterface(name: "eth0", index: 2, kind: .ethernet))
    static let cellular = NetworkReachabilityStatus.reachable(
        NetworkInterface(name: "wwan0", index: 5, kind: .cellular))

    static func reachability(
        _ status: NetworkReachabilityStatus, from previous: NetworkReachabilityStatus, host: String? = nil
    ) -> TypedNotification<ReachabilityChange> {
        TypedNotification(
            name: .reachabilityDidChange, object: nil,
            userInfo: ReachabilityChange(status: status, previousStatus: previous, host: host, date: Date()))
    }
}

/// Each ready observer reports tasks waiting for a network and reachability changes: the activity
/// indicator, a log line, metrics, span events, JSON lines, and AFNetworking's notification on Foundation.
@Suite("Observers of taskIsWaitingForConnectivity and reachabilityDidChange")
struct ReachabilityObserverTests {
    @Test("a waiting task is no activity; the end of its own wait ends that, not a reachable network")
    func activityIndicator() {
        let clock = ManualScheduler()
        let indicator = NetworkActivityIndicator(activationDelay: 1, completionDelay: 0.17, scheduler: clock)
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        #expect(indicator.waitingTaskCount == 1)
        #expect(indicator.runningTaskCount == 1)
        #expect(indicator.state == .delayingEnd)
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        // One host's monitor is no news of the network the task waits for. Before, it ended every wait.
        indicator.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable, host: "h.test"))
        #expect(indicator.waitingTaskCount == 1)
        #expect(indicator.networkStatus != Payloads.ethernet)
        // A reachable network need not route to the task's host (an IPv6 host, IPv4 routes only): before, it ended
        // the wait, and the indicator showed activity for as long as Herald still waited.
        indicator.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable))
        #expect(indicator.networkStatus == Payloads.ethernet)
        #expect(indicator.waitingTaskCount == 1)
        #expect(indicator.state == .notActive)
        // The task's own wait ends: it starts again and counts as activity once more.
        indicator.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        #expect(indicator.waitingTaskCount == 0)
        #expect(indicator.state == .delayingStart)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 1)
        #expect(indicator.state == .notActive)
        // A wait for a task that isn't running is not recorded.
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 9))
        #expect(indicator.waitingTaskCount == 0)
    }

    @Test(
        "the end of a task's wait makes it activity again, with no reachability monitor on the center; paused, once resumed"
    )
    func activityIndicatorWaitEnded() {
        let clock = ManualScheduler()
        let indicator = NetworkActivityIndicator(activationDelay: 1, completionDelay: 0.17, scheduler: clock)
        indicator.taskDidResume(Payloads.resume(task: 1))
        clock.advance(by: 1)
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        // Before, the task stayed waiting until it completed: its whole transfer after the wait showed nothing.
        indicator.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        #expect(indicator.waitingTaskCount == 0 && indicator.runningTaskCount == 1)
        #expect(indicator.state == .delayingStart)
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 1))
        clock.advance(by: 0.17)
        #expect(indicator.state == .notActive)
        // A task paused while it waited, whose wait ends meanwhile: resumed, it transfers, and is activity.
        indicator.taskDidResume(Payloads.resume(task: 2))
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 2))
        indicator.taskDidSuspend(Payloads.suspend(task: 2))
        indicator.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 2))
        indicator.taskDidResume(Payloads.resume(task: 2))
        #expect(indicator.waitingTaskCount == 0 && indicator.runningTaskCount == 1)
        clock.advance(by: 1)
        #expect(indicator.state == .active)
    }

    @Test("a wait announced after the task was paused (its attempt failed as it was paused) goes on once resumed")
    func activityIndicatorWaitAnnouncedWhilePaused() {
        let clock = ManualScheduler()
        let indicator = NetworkActivityIndicator(activationDelay: 1, completionDelay: 0.17, scheduler: clock)
        indicator.taskDidResume(Payloads.resume(task: 1))
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        // Before, the wait was dropped and the resumed task showed as activity for as long as it waited.
        #expect(indicator.waitingTaskCount == 1 && indicator.runningTaskCount == 1)
        clock.advance(by: 1)
        #expect(indicator.state == .notActive)
        indicator.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        indicator.taskDidComplete(Payloads.complete(task: 1))
    }

    @Test("a task paused and resumed while it waits for a network still waits; its wait ending meanwhile ends it")
    func activityIndicatorPausedWait() {
        let clock = ManualScheduler()
        let indicator = NetworkActivityIndicator(activationDelay: 1, completionDelay: 0.17, scheduler: clock)
        indicator.taskDidResume(Payloads.resume(task: 1))
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        #expect(indicator.waitingTaskCount == 0 && indicator.runningTaskCount == 0)
        // The task announced its wait once; resumed, it is still waiting and is no activity.
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.waitingTaskCount == 1 && indicator.runningTaskCount == 1)
        clock.advance(by: 1)
        #expect(indicator.state == .notActive)
        // Paused again, and the network comes back meanwhile (a reachable status alone ends nothing): resumed, it
        // transfers.
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        indicator.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable))
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.waitingTaskCount == 1)
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        indicator.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.waitingTaskCount == 0)
        clock.advance(by: 1)
        #expect(indicator.state == .active)
        // A completion forgets a paused wait: a later resume under that key is activity, not a wait.
        indicator.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        indicator.taskDidSuspend(Payloads.suspend(task: 1))
        indicator.taskDidComplete(Payloads.complete(task: 1))
        indicator.taskDidResume(Payloads.resume(task: 1))
        #expect(indicator.waitingTaskCount == 0 && indicator.runningTaskCount == 1)
    }

    @Test("the logging observer writes the wait and the change at debug, with bounded labels")
    func logLines() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "herald.test") { _ in handler }
        logger.logLevel = .debug
        let observer = LoggingObserver(logger: logger)
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 4, session: 2))
        observer.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable, host: "10.0.0.1"))
        await observer.flush()
        #expect(
            handler.entries.map(\.message.description) == [
                "task waiting for connectivity", "network reachability changed",
            ])
        #expect(handler.entries.allSatisfy { $0.level == .debug })
        let wait = try #require(handler.entries.first)
        #expect(wait.metadata["herald.task.id"]?.description == "4")
        #expect(wait.metadata["error.type"] == "cannot_connect")
        let change = try #require(handler.entries.last)
        #expect(change.metadata["herald.reachability.status"] == "reachable_via_ethernet")
        #expect(change.metadata["herald.reachability.previous_status"] == "not_reachable")
        #expect(change.metadata["network.interface.name"] == "eth0")
        #expect(change.metadata["server.address"] == "10.0.0.1")
    }

    @Test("the metrics observer counts waits and changes, and sets the reachable meter")
    func metrics() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 2))
        let waits = try metrics.test.expectCounter(
            MetricsObserver.Name.connectivityWaits, [("http.request.method", "GET"), ("error.type", "cannot_connect")])
        #expect(waits.totalValue == 2)
        observer.reachabilityDidChange(Payloads.reachability(.notReachable, from: .unknown))
        let meter = try metrics.test.expectMeter(MetricsObserver.Name.networkReachable)
        #expect(meter.lastValue == 0)
        observer.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable))
        #expect(meter.lastValue == 1)
        let changes = try metrics.test.expectCounter(
            MetricsObserver.Name.reachabilityChanges, [("herald.reachability.status", "reachable_via_ethernet")])
        #expect(changes.totalValue == 1)
        #expect(metrics.count(MetricsObserver.Name.connectivityWaits) == 1)
        // A monitor of one host: its route, not the network. Before, it set the gauge to 0 while the network was up.
        observer.reachabilityDidChange(
            Payloads.reachability(.notReachable, from: Payloads.ethernet, host: "api.example"))
        #expect(meter.lastValue == 1)
        let down = try metrics.test.expectCounter(
            MetricsObserver.Name.reachabilityChanges, [("herald.reachability.status", "not_reachable")])
        #expect(down.totalValue == 1)
    }

    @Test("the metrics observer takes a task waiting for a network out of active requests until the wait ends")
    func activeRequestsWhileWaiting() throws {
        let metrics = CountingMetrics()
        let observer = MetricsObserver(factory: metrics)
        observer.taskDidResume(Payloads.resume(task: 1))
        observer.taskDidResume(Payloads.resume(task: 2))
        let active = try metrics.test.expectMeter(MetricsObserver.Name.activeRequests, MetricsObserverTests.target())
        #expect(active.lastValue == 2)
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        #expect(active.lastValue == 1)
        // Suspended and resumed while it waits: still waiting, still not counted.
        observer.taskDidSuspend(Payloads.suspend(task: 1))
        observer.taskDidResume(Payloads.resume(task: 1))
        #expect(active.lastValue == 1)
        observer.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        #expect(active.lastValue == 2)
        // A wait that ends in the task's completion (its resource timeout) takes nothing away twice.
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 2))
        #expect(active.lastValue == 1)
        observer.taskDidComplete(Payloads.complete(task: 2, error: HeraldError(.timedOut, "No network came back.")))
        #expect(active.lastValue == 1)
        // A suspended task whose network comes back counts again only when resumed.
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        observer.taskDidSuspend(Payloads.suspend(task: 1))
        observer.taskDidEndWaitingForConnectivity(Payloads.waitEnded(task: 1))
        #expect(active.lastValue == 0)
        observer.taskDidResume(Payloads.resume(task: 1))
        #expect(active.lastValue == 1)
    }

    @Test("the tracing observer records the wait on the task's span and a change on every open span")
    func spanEvents() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        observer.taskDidResume(Payloads.resume(task: 1))
        observer.taskIsWaitingForConnectivity(Payloads.waiting(task: 1))
        observer.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable))
        observer.taskDidComplete(Payloads.complete(task: 1))
        // No span is open any more: a change is recorded nowhere.
        observer.reachabilityDidChange(Payloads.reachability(.notReachable, from: Payloads.ethernet))
        let span = try #require(tracer.finishedSpans.first)
        #expect(
            span.events.map(\.name) == ["herald.task.waiting_for_connectivity", "herald.network.reachability_changed"])
        #expect(span.events.first?.attributes.get("error.type") == .string("cannot_connect"))
        #expect(span.events.last?.attributes.get("herald.reachability.status") == .string("reachable_via_ethernet"))
    }

    @Test("the tracing observer puts a monitor of one host's change on the spans of requests to that host only")
    func hostChangeOnItsSpans() throws {
        let tracer = InMemoryTracer()
        let observer = TracingObserver(tracer: tracer)
        let request = RequestSummary(method: "GET", url: try #require(URL(string: "http://api.example/orders")))
        observer.taskDidResume(Payloads.resume(task: 1, request: request))
        for host in ["other.example", "API.example"] {
            observer.reachabilityDidChange(Payloads.reachability(.notReachable, from: Payloads.ethernet, host: host))
        }
        observer.taskDidComplete(Payloads.complete(task: 1))
        let span = try #require(tracer.finishedSpans.first)
        // Before, both changes went on the span, the other host's read as this request's network going away.
        #expect(span.events.map(\.name) == ["herald.network.reachability_changed"])
        #expect(span.events.first?.attributes.get("server.address") == .string("api.example"))
    }

    @Test("the JSON-lines log writes a waiting line and a reachability line without a session")
    func jsonLines() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        log.taskIsWaitingForConnectivity(Payloads.waiting(task: 3, session: 2))
        log.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .notReachable))
        await log.flush()
        let records = try output.text.split(separator: "\n").map {
            try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8))
        }
        #expect(records.map(\.event) == ["herald.task.waiting-for-connectivity", "herald.reachability.change"])
        #expect(records.first?.task == 3 && records.first?.session == 2)
        #expect(records.first?.error == "cannot_connect")
        #expect(records.last?.session == nil)
        #expect(records.last?.reachability == "reachable_via_ethernet")
        #expect(records.last?.previousReachability == "not_reachable")
        #expect(records.last?.interface == "eth0")
    }

    @Test("the Foundation bridge re-posts a change under AFNetworking's name, with AFNetworking's status number")
    func foundationBridge() throws {
        let center = NotificationCenter()
        let received = Locked<[[AnyHashable: Any]]>([])
        let token = center.addObserver(
            forName: AFNetworkingNotifications.reachabilityDidChange, object: nil, queue: nil
        ) {
            note in
            let userInfo = note.userInfo ?? [:]
            received.withLock { $0.append(userInfo) }
        }
        defer { center.removeObserver(token) }
        let bridge = FoundationNotificationBridge(center: center)
        bridge.reachabilityDidChange(Payloads.reachability(Payloads.ethernet, from: .unknown))
        bridge.reachabilityDidChange(Payloads.reachability(Payloads.cellular, from: Payloads.ethernet))
        bridge.reachabilityDidChange(Payloads.reachability(.notReachable, from: Payloads.cellular))
        let numbers = received.withLock { $0 }.map { $0[AFNetworkingNotifications.reachabilityStatusItemKey] as? Int }
        #expect(numbers == [2, 1, 0])
        let statuses = received.withLock { $0 }.map {
            $0[FoundationNotificationBridge.reachabilityStatusKey] as? NetworkReachabilityStatus
        }
        #expect(statuses == [Payloads.ethernet, Payloads.cellular, .notReachable])
        #expect(
            AFNetworkingNotifications.reachabilityDidChange.rawValue == "com.alamofire.networking.reachability.change")
        #expect(AFNetworkingNotifications.reachabilityStatusValue(.unknown) == -1)
    }
}
