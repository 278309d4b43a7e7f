import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// A transfer that finishes while its task is suspended never completes the task: the outcome is held
/// until `resume()` (then `taskDidResume`, `taskDidComplete`) or `cancel()` (then it completes cancelled).
///
/// `suspend()` is called from a hook that runs after the transfer has ended and before the task completes
/// (a retrier, an authentication challenge), so the suspension lands inside that window in every run.
@Suite("Holding an outcome while suspended")
struct HeldOutcomeTests {
    /// The task didn't hold an outcome within the timeout.
    struct NeverHeld: Error, CustomStringConvertible {
        let taskIdentifier: Int
        let timeout: Duration
        var description: String { "task \(taskIdentifier) held no outcome within \(timeout)" }
    }

    /// Waits until the task holds a finished transfer's outcome: told by the task, never by looking again.
    private static func waitUntilHolding(_ task: SessionTask, timeout: Duration = .seconds(10)) async throws {
        let held = OneShot<Void>()
        task.whenHoldingOutcome { held.send(()) }
        do {
            try await held.value(timeout: timeout)
        } catch {
            throw NeverHeld(taskIdentifier: task.taskIdentifier, timeout: timeout)
        }
    }

    /// The task's kinds of events once its `taskDidSuspend` has reached the recorder (notifications arrive
    /// from the session's event queue, after the state change itself).
    private static func timelineAfterSuspend(
        of task: SessionTask, in fixture: SessionFixture
    ) async throws -> [RecordingObserver.Kind] {
        let events = try await fixture.recorder.waitUntil { events in
            events.contains { $0.kind == .suspend && $0.taskIdentifier == task.taskIdentifier }
        }
        return events.filter { $0.taskIdentifier == task.taskIdentifier }.map(\.kind)
    }

    /// Resumes `task`, which suspends itself after its transfer ended: its outcome is held (suspended, no
    /// completion, `resume, suspend`) until the next `resume()`, after which it completes at once
    /// (`resume, suspend, resume, complete`).
    private static func expectHeldUntilResume(
        _ task: SessionTask, in fixture: SessionFixture, calls: CompletionLog
    ) async throws {
        task.resume()
        try await waitUntilHolding(task)

        #expect(task.state == .suspended)
        #expect(calls.all.count == 0)
        #expect(try await timelineAfterSuspend(of: task, in: fixture) == [.resume, .suspend])

        task.resume()
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(
            events.filter { $0.taskIdentifier == task.taskIdentifier }.map(\.kind) == [
                .resume, .suspend, .resume, .complete,
            ])
    }

    /// A data task on `path` whose retrier suspends it and declines to retry.
    private static func taskSuspendedByItsRetrier(
        _ fixture: SessionFixture, path: String, calls: CompletionLog
    ) throws -> DataTask {
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url(path)), completionHandler: calls.handler)
        task.interceptor = Interceptor(retry: { context in
            context.task.suspend()
            return .doNotRetry
        })
        return task
    }

    @Test("a 503 whose retrier suspends the task is held, and completes, unchanged, right after resume()")
    func heldUntilResume() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let calls = CompletionLog()
        let task = try Self.taskSuspendedByItsRetrier(fixture, path: "/status/503", calls: calls)
        try await Self.expectHeldUntilResume(task, in: fixture, calls: calls)
        #expect(task.state == .completed)
        #expect(task.response?.statusCode == 503)
        #expect(task.error?.code == .unacceptableStatusCode)
        #expect(calls.all.count == 1)
        #expect(!task.isHoldingOutcome)
        try await fixture.tearDown()
    }

    @Test("a held outcome is dropped by cancel(): the task completes once, cancelled, never resumed")
    func heldThenCancelled() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let calls = CompletionLog()
        let task = try Self.taskSuspendedByItsRetrier(fixture, path: "/status/503", calls: calls)
        task.resume()
        try await Self.waitUntilHolding(task)

        task.cancel()
        let events = try await fixture.recorder.waitForCompletions(1)
        #expect(
            events.filter { $0.taskIdentifier == task.taskIdentifier }.map(\.kind) == [.resume, .suspend, .complete])
        #expect(task.error?.code == .cancelled)
        #expect(calls.all.count == 1)
        #expect(calls.all.first?.error?.code == .cancelled)
        task.resume()  // Completed: nothing more happens.
        #expect(task.state == .completed)
        try await fixture.tearDown()
    }

    @Test("a 401 whose challenge hook suspends the task and rejects the space is held until resume()")
    func heldAfterChallenge() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.taskDidReceiveAuthenticationChallenge = { task, _ in
            task.suspend()
            return .rejectProtectionSpace
        }
        let calls = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=alice&password=s3cret")),
            completionHandler: calls.handler)
        try await Self.expectHeldUntilResume(task, in: fixture, calls: calls)
        #expect(task.response?.statusCode == 401)
        #expect(fixture.server.requests(forPath: "/auth/basic").map(\.responseStatus) == [401])
        #expect(calls.all.count == 1)
        try await fixture.tearDown()
    }
}
