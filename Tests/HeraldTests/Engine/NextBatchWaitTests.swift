import Dispatch
import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// A session's completion queue waits awake for the loop thread's next batch only when the session's one
/// outstanding transfer is its next work, never for long, and not while waiting doesn't pay.
@Suite("Waiting for the next batch", .timeLimit(.minutes(1)))
struct NextBatchWaitTests {
    @Test("the backoff turns waiting off after a wait runs out, and on when a hand-off comes soon")
    func backoff() {
        var backoff = WaitBackoff(duration: 100)
        #expect(backoff.step { $0.shouldWait(at: 0) })
        backoff.waitEnded(answered: true)
        #expect(backoff.isWaiting)
        backoff.waitEnded(answered: false)
        #expect(!backoff.isWaiting)
        // Declined at 1,000; its hand-off came 500 later, past the duration: still off.
        #expect(!backoff.step { $0.shouldWait(at: 1_000) })
        backoff.handOffArrived(at: 1_500)
        #expect(!backoff.isWaiting)
        // A hand-off without a declined opportunity before it changes nothing.
        backoff.handOffArrived(at: 1_600)
        #expect(!backoff.isWaiting)
        // Declined at 2,000, hand-off at 2,100: back on.
        #expect(!backoff.step { $0.shouldWait(at: 2_000) })
        backoff.handOffArrived(at: 2_100)
        #expect(backoff.isWaiting)
        // Another miss: the next opportunity is declined, and one whose hand-off came soon turns it back on.
        backoff.waitEnded(answered: false)
        #expect(!backoff.isWaiting)
        #expect(!backoff.step { $0.shouldWait(at: 50_000) })
        backoff.handOffArrived(at: 50_010)
        #expect(backoff.isWaiting)
    }

    @Test("no wait unless one transfer is outstanding and nothing else of the library is queued; a miss backs off")
    func waitConditions() async {
        let queue = DispatchQueue(label: "herald.test.next-batch")
        let lane = DeliveryLane(queue: queue, group: nil, isSerial: true, waitsForNextBatch: true)
        let early = await queue.queued { () -> [Int] in
            var counts: [Int] = []
            lane.awaitNextBatch()  // nothing outstanding
            counts.append(lane.waitsStarted)
            lane.transferStarted()
            lane.transferStarted()
            lane.awaitNextBatch()  // two outstanding
            counts.append(lane.waitsStarted)
            lane.transfersProceeded()
            lane.enqueue {}  // a block of the library's queued behind this one
            lane.awaitNextBatch()
            counts.append(lane.waitsStarted)
            return counts
        }
        #expect(early == [0, 0, 0])
        // The queued block was the last: it waited, nothing was published, so the wait ran out; the next
        // opportunity is declined.
        let late = await queue.queued { () -> [Int] in
            let afterQueuedBlock = lane.waitsStarted
            lane.awaitNextBatch()
            return [afterQueuedBlock, lane.waitsStarted, lane.waitsAnswered, lane.waitsInterrupted]
        }
        #expect(late == [1, 1, 0, 0])

        let caller = DeliveryLane(queue: queue, group: nil, isSerial: false)
        let started = await queue.queued { () -> Int in
            caller.transferStarted()
            caller.awaitNextBatch()
            return caller.waitsStarted
        }
        #expect(started == 0)
    }

    @Test("a transfer whose follow-up runs in a transport batch stays outstanding until the batch's completions are queued")
    func transportBatchCountsAfterItsCompletions() async {
        let completionQueue = DispatchQueue(label: "herald.test.next-batch.completion")
        let completion = DeliveryLane(queue: completionQueue, group: nil, isSerial: true, waitsForNextBatch: true)
        let transportQueue = DispatchQueue(label: "herald.test.next-batch.transport")
        let transport = DeliveryLane(queue: transportQueue, group: nil, isSerial: true)
        completion.transferStarted()
        completion.transferStarted()
        // Outside a batch nothing is deferred: the caller counts at once.
        #expect(!transport.deferTransferProceeded(for: completion))

        struct Seen: Sendable {
            var deferredInBatch = false
            var outstandingInBatch = -1
            var outstandingWhenCompletionRan = -1
        }
        let seen = Locked(Seen())
        let done = OneShot<Void>()
        // The loop thread's part, played here: one transport batch with one finished transfer, whose
        // follow-up completes its task.
        transport.collect(
            .work {
                let queued = transport.deferUntilBatchEnds(
                    .work {
                        seen.withLock { $0.outstandingWhenCompletionRan = completion.outstandingTransfers }
                        done.send(())
                    }, to: completion)
                let deferred = transport.deferTransferProceeded(for: completion)
                seen.withLock {
                    $0.deferredInBatch = queued && deferred
                    $0.outstandingInBatch = completion.outstandingTransfers
                }
            })
        // Held until the batch's block is queued, so the completion block can't run before the count drops.
        completionQueue.suspend()
        transport.publish()
        // A block queued on the transport queue after the batch's runs once the batch has ended.
        let afterBatch = await transportQueue.queued { completion.outstandingTransfers }
        completionQueue.resume()
        #expect(afterBatch == 1)
        #expect((try? await done.value(timeout: .seconds(10))) != nil)
        let result = seen.withLock { $0 }
        #expect(result.deferredInBatch)
        // During the batch the transfer was still outstanding: the other transfer isn't the queue's only one.
        #expect(result.outstandingInBatch == 2)
        #expect(result.outstandingWhenCompletionRan == 1)
    }

    @Test("requests started one after another from completion handlers all complete, in order, with a wait")
    func sequentialHandlers() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let count = 20
        let finished = OneShot<[Int]>()
        let statuses = Locked<[Int]>([])
        @Sendable func start(_ index: Int) {
            do {
                try session.dataTask(with: Request(url: server.url("/json?n=\(index)"))) { response, _, error in
                    statuses.withLock { $0.append(error == nil ? response?.statusCode ?? 0 : -index) }
                    if index + 1 < count { start(index + 1) } else { finished.send(statuses.withLock { $0 }) }
                }.resume()
            } catch {
                finished.send([-1])
            }
        }
        start(0)
        let result = try await finished.value(timeout: .seconds(20))
        #expect(result == Array(repeating: 200, count: count))
        // Each handler left the session's only transfer outstanding: the first of them waited at least.
        let lane = session.lanes.completion
        #expect(await session.completionQueue.queued { lane.waitsStarted } >= 1)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a wait never holds the completion queue until its transfer ends")
    func waitIsBounded() async throws {
        let server = try await TestServer.start()
        var configuration = SessionConfiguration.default
        configuration.maximumConnectionsPerHost = 4
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        let url = server.url("/barrier/2?key=bounded")
        let bothDone = Countdown(2)
        let failures = Locked(0)
        @Sendable func barrierRequest() {
            do {
                try session.dataTask(with: Request(url: url)) { response, _, _ in
                    if response?.statusCode != 200 { failures.withLock { $0 += 1 } }
                    bothDone.countDown()
                }.resume()
            } catch {
                failures.withLock { $0 += 1 }
                bothDone.countDown()
            }
        }
        // The first request's handler starts a request the server parks until a second one arrives; the
        // second is started from a block queued behind that handler. A wait held until the parked request's
        // answer would keep that block from ever running.
        try session.dataTask(with: Request(url: server.url("/json"))) { _, _, _ in
            barrierRequest()
            session.completionQueue.async { barrierRequest() }
        }.resume()
        #expect(await bothDone.wait(timeout: .seconds(20)))
        #expect(failures.withLock { $0 } == 0)
        // The first handler's block did wait (the session's only transfer was the parked one), and ran out.
        let lane = session.lanes.completion
        #expect(await session.completionQueue.queued { lane.waitsStarted } >= 1)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a fresh cached response counts as a transfer: the session's count of outstanding ones stays balanced")
    func cacheHitKeepsTheCountBalanced() async throws {
        let server = try await TestServer.start()
        var configuration = SessionConfiguration.default
        configuration.responseCache = InMemoryResponseCache(capacity: 1 << 20)
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        let request = Request(url: server.url("/headers?Cache-Control=max-age%3D60"))
        for _ in 0..<3 {
            let (_, response) = try await session.data(for: request)
            #expect(response.statusCode == 200)
        }
        #expect(server.requestCount == 1)
        // A cached response's follow-up runs on the transport queue and counts the transfer done with right
        // after it has queued the completion, so the completion may resume this test first: a block queued
        // there after it runs once it has counted.
        await session.lanes.transport.queue.queued {}
        let lane = session.lanes.completion
        #expect(await session.completionQueue.queued { lane.outstandingTransfers } == 0)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}

extension WaitBackoff {
    /// Applies a mutating call and returns its result, so that `#expect` can check it.
    fileprivate mutating func step(_ call: (inout WaitBackoff) -> Bool) -> Bool { call(&self) }
}
