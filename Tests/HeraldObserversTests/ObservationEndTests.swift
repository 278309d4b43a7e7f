import CoreMetrics
import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import InMemoryTracing
import MetricsTestKit
import Testing

/// A token cancelled while its observer lives on: what the registration left open is taken back, and only that.
@Suite("Observers whose token ends before the tasks they saw")
struct ObservationEndTests {
    /// The ready observers that keep state per task, each registered on two hubs (two sessions).
    final class Rig: Sendable {
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let clock = ManualScheduler()
        let metricsObserver: MetricsObserver
        let tracing: TracingObserver<InMemoryTracer>
        let indicator: NetworkActivityIndicator

        init() {
            metricsObserver = MetricsObserver(factory: metrics)
            tracing = TracingObserver(tracer: tracer)
            indicator = NetworkActivityIndicator(activationDelay: 0, completionDelay: 0, scheduler: clock)
        }

        func observe(_ center: NotificationHub, delivery: NotificationDelivery = .posting) -> [ObservationToken] {
            [
                metricsObserver.observe(center, delivery: delivery), tracing.observe(center, delivery: delivery),
                indicator.observe(center, delivery: delivery),
            ]
        }

        var activeRequests: Double {
            metrics.meters.filter { $0.label == MetricsObserver.Name.activeRequests }.compactMap(\.lastValue)
                .reduce(0, +)
        }

        var openConnections: Double {
            metrics.meters.filter { $0.label == MetricsObserver.Name.openConnections }.compactMap(\.lastValue)
                .reduce(0, +)
        }
    }

    @Test("a cancelled token takes back the counts, spans and activity of its tasks; the other hub's task stays")
    func cancelledToken() {
        let rig = Rig()
        let first = NotificationHub()
        let second = NotificationHub()
        let firstTokens = rig.observe(first)
        let secondTokens = rig.observe(second)
        first.post(.taskDidResume, userInfo: Payloads.resume(task: 1, session: 1).userInfo)
        first.post(.taskDidResume, userInfo: Payloads.resume(task: 2, session: 1).userInfo)
        first.post(.taskDidComplete, userInfo: Payloads.complete(task: 2, session: 1).userInfo)
        let url = Payloads.anyRequest.url
        first.post(
            .connectionDidChangeState,
            userInfo: Payloads.connection(.active, previous: nil, active: 1, idle: 0, url: url, session: 1).userInfo)
        second.post(.taskDidResume, userInfo: Payloads.resume(task: 1, session: 2).userInfo)
        #expect(rig.activeRequests == 2)
        #expect(rig.openConnections == 1)
        #expect(rig.tracer.activeSpans.count == 2)
        #expect(rig.indicator.runningTaskCount == 2)

        for token in firstTokens { token.cancel() }
        // Before, session 1's task stayed counted, its span open and the indicator up for as long as the
        // observers lived.
        #expect(rig.activeRequests == 1)
        #expect(rig.openConnections == 0)
        #expect(rig.tracer.activeSpans.count == 1)
        let ended = rig.tracer.finishedSpans.filter { $0.attributes.get("herald.observation.ended") == .bool(true) }
        #expect(ended.count == 1)
        #expect(rig.indicator.runningTaskCount == 1)
        // Nothing more comes through the cancelled registration.
        first.post(.taskDidResume, userInfo: Payloads.resume(task: 3, session: 1).userInfo)
        #expect(rig.activeRequests == 1 && rig.indicator.runningTaskCount == 1)

        second.post(.taskDidComplete, userInfo: Payloads.complete(task: 1, session: 2).userInfo)
        #expect(rig.activeRequests == 0)
        #expect(rig.tracer.activeSpans.isEmpty)
        #expect(rig.indicator.runningTaskCount == 0)
        // The duration histogram has the two completions heard, not the task whose outcome is unknown.
        #expect(
            rig.metrics.timers.filter { $0.label == MetricsObserver.Name.requestDuration }.flatMap(\.values).count == 2)
        withExtendedLifetime(secondTokens) {}
    }

    @Test("with queue delivery, a completion posted but not delivered when the token ends counts as never heard")
    func queuedCompletionDiscarded() async {
        let rig = Rig()
        let center = NotificationHub()
        let queue = DispatchQueue(label: "observation-end")
        let tokens = rig.observe(center, delivery: .queue(queue))
        center.post(.taskDidResume, userInfo: Payloads.resume(task: 1).userInfo)
        await center.drain()
        #expect(rig.activeRequests == 1)
        // The queue is held while the completion is posted and the token cancelled: the completion is discarded.
        let hold = DispatchSemaphore(value: 0)
        queue.async { hold.wait() }
        center.post(.taskDidComplete, userInfo: Payloads.complete(task: 1).userInfo)
        let cancelling = DispatchGroup()
        DispatchQueue.global().async(group: cancelling) { for token in tokens { token.cancel() } }
        // The cancel waits for nothing the held queue runs: it ends the registration, then the queue goes on.
        #expect(cancelling.wait(timeout: .now() + 10) == .success)
        hold.signal()
        queue.sync {}
        #expect(rig.activeRequests == 0)
        #expect(rig.tracer.activeSpans.isEmpty)
        #expect(rig.indicator.runningTaskCount == 0)
    }
}
