import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Session invalidation")
struct InvalidationTests {
    @Test("invalidate(cancelingTasks: false) lets running tasks finish before sessionDidInvalidate")
    func finishTasksThenInvalidate() async throws {
        let fixture = try await SessionFixture.make()
        let first = try fixture.session.dataTask(with: Request(url: fixture.server.url("/delay/200")))
        let second = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        first.resume()
        second.resume()
        fixture.session.invalidate(cancelingTasks: false)
        #expect(fixture.session.isInvalidated)
        try await fixture.recorder.waitForInvalidation()
        #expect(first.error == nil)
        #expect(second.error == nil)
        let kinds = fixture.recorder.events.map(\.kind)
        #expect(kinds.filter { $0 == .complete }.count == 2)
        #expect(kinds.last == .invalidate)
        #expect(kinds.filter { $0 == .invalidate }.count == 1)
        try await fixture.server.shutdown()
    }

    @Test("invalidate(cancelingTasks: true) cancels running tasks, then posts sessionDidInvalidate")
    func invalidateAndCancel() async throws {
        let fixture = try await SessionFixture.make()
        let stalled = try fixture.session.dataTask(with: Request(url: fixture.server.url("/fault/stall")))
        let neverResumed = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        stalled.resume()
        try await fixture.server.waitForRequests(count: 1)
        fixture.session.invalidate(cancelingTasks: true)
        try await fixture.recorder.waitForInvalidation()
        let events = fixture.recorder.timeline
        #expect(
            events == [
                "resume#\(stalled.taskIdentifier)", "complete#\(stalled.taskIdentifier)",
                "complete#\(neverResumed.taskIdentifier)", "invalidate",
            ]
                || events == [
                    "resume#\(stalled.taskIdentifier)", "complete#\(neverResumed.taskIdentifier)",
                    "complete#\(stalled.taskIdentifier)", "invalidate",
                ])
        #expect(stalled.error?.code == .cancelled)
        #expect(neverResumed.error?.code == .cancelled)
        #expect(fixture.session.tasks.isEmpty)
        try await fixture.server.shutdown()
    }

    @Test("creating a task on an invalidated session throws sessionInvalidated")
    func taskAfterInvalidation() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.invalidate(cancelingTasks: false)
        #expect(throws: HeraldError.self) {
            _ = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        }
        do {
            _ = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        } catch {
            #expect(error.code == .sessionInvalidated)
        }
        try await fixture.recorder.waitForInvalidation()
        #expect(fixture.recorder.timeline == ["invalidate"])
        try await fixture.server.shutdown()
    }

    @Test("refusing a download task on an invalidated session creates nothing on disk")
    func refusedDownloadCreatesNothing() async throws {
        let fixture = try await SessionFixture.make()
        #expect(fixture.session.downloadDirectory.madeURL == nil)
        await fixture.session.invalidateAndWait()
        for _ in 0..<3 {
            #expect(throws: HeraldError.self) {
                _ = try fixture.session.downloadTask(with: Request(url: fixture.server.url("/bytes/10")))
            }
        }
        do {
            _ = try fixture.session.downloadTask(with: Request(url: fixture.server.url("/bytes/10")))
        } catch {
            #expect(error.code == .sessionInvalidated)
        }
        #expect(fixture.session.downloadDirectory.madeURL == nil)
        try await fixture.server.shutdown()
    }

    @Test("two sessions running at once each post only their own tasks on their own center")
    func sessionsAreIsolated() async throws {
        let one = try await SessionFixture.make()
        let two = try await SessionFixture.make()
        var oneTasks: [DataTask] = []
        var twoTasks: [DataTask] = []
        for _ in 0..<5 {
            oneTasks.append(try one.session.dataTask(with: Request(url: one.server.url("/json"))))
            twoTasks.append(try two.session.dataTask(with: Request(url: two.server.url("/text"))))
        }
        for task in oneTasks + twoTasks { task.resume() }
        try await one.recorder.waitForCompletions(5)
        try await two.recorder.waitForCompletions(5)
        #expect(one.recorder.events.allSatisfy { $0.sessionIdentifier == one.session.identifier })
        #expect(two.recorder.events.allSatisfy { $0.sessionIdentifier == two.session.identifier })
        #expect(one.recorder.events.count == 10)
        #expect(two.recorder.events.count == 10)
        #expect(Set(one.recorder.events.compactMap(\.taskIdentifier)) == Set(oneTasks.map(\.taskIdentifier)))
        try await one.tearDown()
        try await two.tearDown()
    }

    @Test("the task lists hold outstanding tasks and drop completed ones")
    func taskLists() async throws {
        let fixture = try await SessionFixture.make()
        let first = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        let second = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
        #expect(fixture.session.tasks.map(\.taskIdentifier) == [first.taskIdentifier, second.taskIdentifier])
        #expect(fixture.session.dataTasks.count == 2)
        first.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.session.tasks.map(\.taskIdentifier) == [second.taskIdentifier])
        try await fixture.tearDown()
    }
}

@Suite("Releasing a session's resources")
struct SessionResourceTests {
    @Test("invalidating a session closes its connections, sockets and transfers")
    func invalidationReleasesEverything() async throws {
        let fixture = try await SessionFixture.make()
        for _ in 0..<4 {
            try fixture.session.dataTask(with: Request(url: fixture.server.url("/json"))).resume()
        }
        try await fixture.recorder.waitForCompletions(4)
        // Keep-alive: the pool still holds its connections to the server.
        #expect(fixture.server.openConnections > 0)
        fixture.session.invalidate(cancelingTasks: false)
        try await fixture.recorder.waitForInvalidation()
        await fixture.session.engineBarrier()
        let counts = await fixture.session.poolCounts()
        #expect(counts.transfers == 0)
        #expect(counts.sockets == 0)
        try await fixture.server.waitForOpenConnections(0)
        try await fixture.server.shutdown()
    }
}

@Suite("Sessions nobody observes")
struct UnobservedSessionTests {
    @Test("with only an invalidation observer, tasks still leave the lists and sessionDidInvalidate follows them")
    func invalidationWithoutTaskObservers() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        let log = CompletionLog()
        let invalidated = AsyncStream<Int>.makeStream()
        let token = center.addObserver(for: .sessionDidInvalidate) { _ in
            invalidated.continuation.yield(log.all.count)
            invalidated.continuation.finish()
        }
        for _ in 0..<5 {
            try session.dataTask(with: Request(url: server.url("/delay/100")), completionHandler: log.handler).resume()
        }
        session.invalidate(cancelingTasks: false)
        // Await the notification with a deadline: the first value wins, the timeout fails the test.
        let handlersRunBeforeInvalidation = try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                for await count in invalidated.stream { return count }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                throw CancellationError()  // the deadline passed: fail rather than hang
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(handlersRunBeforeInvalidation == 5)
        #expect(session.tasks.isEmpty)
        #expect(log.all.allSatisfy { $0.error == nil })
        token.cancel()
        try await server.shutdown()
    }
}
