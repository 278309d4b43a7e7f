import Dispatch
import Foundation
import Glibc
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// Which thread follows up a finished transfer: the loop thread for a session's lone transfer; while others
/// are in flight, the session's own completion queue for an outcome that can only complete its task (a 2xx
/// without error or cookies), the transport queue for every other.
@Suite("Routing finished transfers", .timeLimit(.minutes(1)))
struct OutcomeRoutingTests {
    static let url = URL(string: "http://127.0.0.1/routing")!

    static func outcome(_ status: Int?, _ fields: [(String, String)] = [], error: HeraldError? = nil)
        -> TransferOutcome
    {
        let response = status.map { HTTPResponse(url: url, statusCode: $0, headers: HTTPHeaders(fields)) }
        return TransferOutcome(response: response, body: Data(), error: error, metrics: nil)
    }

    @Test("only a final response without error or Set-Cookie can only complete its task")
    func onlyCompletesItsTask() {
        for status in [200, 201, 204, 206, 299] {
            #expect(OutcomeLanes.onlyCompletesItsTask(Self.outcome(status, [("Content-Type", "text/plain")])))
        }
        // Redirects, a 304, challenges and statuses a retrier may retry lead somewhere, or may.
        for status in [101, 199, 300, 301, 302, 303, 304, 307, 308, 400, 401, 404, 407, 429, 500, 503] {
            #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(status)), "status \(status)")
        }
        // A cookie must be stored before another task's next hop is built, whatever its case.
        #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(200, [("Set-Cookie", "a=b")])))
        #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(204, [("set-cookie", "a=b; Path=/")])))
        // An error may be retried, or wait for connectivity, even with a response.
        let lost = HeraldError(.networkConnectionLost, "The connection was lost.")
        #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(200, error: lost)))
        #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(nil, error: HeraldError(.timedOut, "Timed out."))))
        #expect(!OutcomeLanes.onlyCompletesItsTask(Self.outcome(nil)))
    }

    @Test("while others are in flight a 2xx is followed up on the completion queue, any other outcome on the transport queue; a lone transfer on the loop thread")
    func routing() async throws {
        let engine = Engine(name: "herald.engine.routing-test")
        let completionQueue = DispatchQueue(label: "herald.test.routing.completion")
        let lanes = OutcomeLanes(
            sessionIdentifier: 0, completionQueue: completionQueue, ownsCompletionQueue: true, group: nil,
            engine: engine)
        let key = DispatchSpecificKey<String>()
        completionQueue.setSpecific(key: key, value: "completion")
        lanes.transport.queue.setSpecific(key: key, value: "transport")

        let cases: [(String, TransferOutcome)] = [
            ("ok", Self.outcome(200)),
            ("no content", Self.outcome(204)),
            ("redirect", Self.outcome(302, [("Location", "/next")])),
            ("challenge", Self.outcome(401, [("WWW-Authenticate", "Basic realm=\"r\"")])),
            ("server error", Self.outcome(503)),
            ("cookie", Self.outcome(200, [("Set-Cookie", "a=b")])),
            ("failure", Self.outcome(nil, error: HeraldError(.cannotConnect, "Refused."))),
        ]
        let recorder = RoutingRecorder(engine: engine, key: key, expected: cases.count)
        // Every case in flight, and one more transfer that stays in flight: none of them is the lone one.
        for _ in 0...cases.count { lanes.transferStarted() }
        engine.execute {
            for (name, outcome) in cases { lanes.transferFinished(recorder.delegate(name), outcome) }
        }
        let seen = try await recorder.everything.value(timeout: .seconds(10))
        #expect(
            seen == [
                "ok": "completion", "no content": "completion", "redirect": "transport", "challenge": "transport",
                "server error": "transport", "cookie": "transport", "failure": "transport",
            ])
        // Each was counted done with after its follow-up, on its queue (from the transport queue, at its
        // batch's end): once a block behind each batch has run, the one left in flight is the only one.
        await completionQueue.queued {}
        #expect(await lanes.transport.queue.queued { lanes.completion.outstandingTransfers } == 1)

        let lone = RoutingRecorder(engine: engine, key: key, expected: 1)
        let countAfterLone = OneShot<Int>()
        engine.execute {
            lanes.transferFinished(lone.delegate("lone 2xx"), Self.outcome(200))
            countAfterLone.send(lanes.completion.outstandingTransfers)
        }
        #expect(try await lone.everything.value(timeout: .seconds(10)) == ["lone 2xx": "loop"])
        #expect(try await countAfterLone.value(timeout: .seconds(10)) == 0)
    }

    @Test("a caller's completion queue (a concurrent lane) never follows up a transfer: the transport queue does")
    func callersQueue() async throws {
        let engine = Engine(name: "herald.engine.routing-caller-test")
        let callers = DispatchQueue(label: "herald.test.routing.callers")
        let lanes = OutcomeLanes(
            sessionIdentifier: 1, completionQueue: callers, ownsCompletionQueue: false, group: nil, engine: engine)
        let key = DispatchSpecificKey<String>()
        lanes.transport.queue.setSpecific(key: key, value: "transport")
        let recorder = RoutingRecorder(engine: engine, key: key, expected: 1)
        lanes.transferStarted()
        lanes.transferStarted()
        engine.execute { lanes.transferFinished(recorder.delegate("ok"), Self.outcome(200)) }
        #expect(try await recorder.everything.value(timeout: .seconds(10)) == ["ok": "transport"])
    }

    @Test("a follow-up's completion in a completion batch runs at the batch's end, in the same block, before the queue's next block; user code's goes behind")
    func ownDeliveriesRunAtTheBatchEnd() async {
        let queue = DispatchQueue(label: "herald.test.routing.own")
        let lane = DeliveryLane(queue: queue, group: nil, isSerial: true, waitsForNextBatch: true)
        let order = Locked<[String]>([])
        let threads = Locked<[String: UInt]>([:])
        @Sendable func record(_ step: String) {
            order.withLock { $0.append(step) }
            threads.withLock { $0[step] = UInt(pthread_self()) }
        }
        // The loop thread's part, played here.
        lane.collect(
            .work {
                lane.followUp {
                    let kept = lane.deferUntilBatchEnds(.work { record("first's completion") }, to: lane)
                    record(kept ? "first" : "first (its completion not kept)")
                }
            })
        // Not a follow-up (a completion handler cancelling another task, say): not kept, so the caller
        // queues it behind what is queued already.
        lane.collect(
            .work {
                let kept = lane.deferUntilBatchEnds(.work { record("user code's completion") }, to: lane)
                record(kept ? "second (user code's completion kept)" : "second")
                if !kept { lane.enqueue { record("user code's completion") } }
            })
        queue.suspend()
        lane.publish()
        queue.async { record("next block") }
        queue.resume()
        await queue.queued {}
        await queue.queued {}
        #expect(
            order.withLock { $0 } == ["first", "second", "first's completion", "next block", "user code's completion"])
        // In the same block, so on the same thread.
        let (first, completion) = threads.withLock { ($0["first"], $0["first's completion"]) }
        #expect(first != nil && first == completion)
        // Outside a batch, and on a lane whose batches may run at the same time, nothing is kept.
        #expect(!lane.deferUntilBatchEnds(.work {}, to: lane))
        let concurrent = DeliveryLane(queue: .global(), group: nil, isSerial: false)
        let keptOnConcurrent = OneShot<Bool>()
        concurrent.collect(.work { keptOnConcurrent.send(concurrent.deferUntilBatchEnds(.work {}, to: concurrent)) })
        concurrent.publish()
        #expect((try? await keptOnConcurrent.value(timeout: .seconds(10))) == false)
    }
}

/// Transfer delegates that record where their follow-up ran: the queue named by `key`, else the loop thread.
private final class RoutingRecorder: Sendable {
    let engine: Engine
    let key: DispatchSpecificKey<String>
    let expected: Int
    let seen = Locked<[String: String]>([:])
    let everything = OneShot<[String: String]>()

    init(engine: Engine, key: DispatchSpecificKey<String>, expected: Int) {
        self.engine = engine
        self.key = key
        self.expected = expected
    }

    func delegate(_ name: String) -> any TransferDelegate { Delegate(name: name, recorder: self) }

    func ran(_ name: String) {
        let place = DispatchQueue.getSpecific(key: key) ?? (engine.isOnLoopThread ? "loop" : "elsewhere")
        let all = seen.withLock { seen -> [String: String]? in
            seen[name] = place
            return seen.count == expected ? seen : nil
        }
        if let all { everything.send(all) }
    }

    private final class Delegate: TransferDelegate {
        let name: String
        let recorder: RoutingRecorder

        init(name: String, recorder: RoutingRecorder) {
            self.name = name
            self.recorder = recorder
        }

        func transferDidReceiveResponse(_ response: HTTPResponse) {}
        func transferDidReceiveBytes(total received: Int64, expected: Int64?) {}
        func transferNeedsResponseDisposition(_ response: HTTPResponse, transfer: Transfer) {}
        func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {}
        func transferDidSendBytes(total sent: Int64, expected: Int64?) {}
        func proceed(after outcome: TransferOutcome) { recorder.ran(name) }
    }
}
