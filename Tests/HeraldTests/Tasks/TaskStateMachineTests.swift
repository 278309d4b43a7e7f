import Foundation
@testable import Herald
import HeraldNotifications
import Testing

/// The task state machine on its own: each transition's answer and the state it leaves, without an engine,
/// a server or a thread. The machine is built alone: its transfers and download tasks are plain objects.
@Suite("The task state machine")
struct TaskStateMachineTests {
    /// A transfer as the machine knows it: an object. No session, engine or libcurl.
    final class FakeTransfer {}
    /// A download task as the machine knows it.
    final class FakeDownload {}

    typealias Machine = TaskStateMachine<FakeTransfer, FakeDownload>

    /// What the tests make: transfers, download tasks and outcomes, nothing that runs.
    struct Parts {
        let url = URL(string: "http://127.0.0.1:9/never-sent")!

        func transfer() -> FakeTransfer { FakeTransfer() }

        func downloadTask() -> FakeDownload { FakeDownload() }

        func outcome(status: Int = 200, error: HeraldError? = nil) -> TransferOutcome {
            let response = HTTPResponse(url: url, statusCode: status, headers: [:])
            return TransferOutcome(response: response, body: Data("body".utf8), error: error, metrics: nil)
        }
    }

    /// A machine that has started and runs `transfer`.
    static func running(_ transfer: FakeTransfer) -> Machine {
        var machine = Machine()
        _ = machine.resume()
        _ = machine.transferPrepared(transfer)
        return machine
    }

    @Test("a new task is suspended and not started; the first resume asks for the first transfer")
    func firstResume() throws {
        var machine = Machine()
        #expect(machine.state == .suspended)
        #expect(!machine.hasStarted)
        guard case .start = machine.resume() else { Issue.record("expected .start"); return }
        #expect(machine.state == .running)
        #expect(machine.hasStarted)
        guard case .none = machine.resume() else { Issue.record("a second resume changes nothing"); return }
    }

    @Test("the prepared transfer starts when running, and waits for resume() when suspended")
    func preparedTransfer() throws {
        let parts = Parts()
        let first = parts.transfer()
        var machine = Machine()
        _ = machine.resume()
        guard case .start(let started) = machine.transferPrepared(first) else {
            Issue.record("expected .start"); return
        }
        #expect(started === first)
        #expect(machine.currentTransfer === first)

        var suspended = Machine()
        _ = suspended.resume()
        guard case .announce = suspended.suspend() else { Issue.record("no transfer to pause yet"); return }
        guard case .wait = suspended.transferPrepared(first) else { Issue.record("expected .wait"); return }
        #expect(suspended.currentTransfer == nil)
        guard case .startTransfer(let waiting) = suspended.resume() else {
            Issue.record("resume() starts the waiting transfer")
            return
        }
        #expect(waiting === first)
        #expect(suspended.currentTransfer === first)
    }

    @Test("suspend pauses the running transfer; resume unpauses it; each only from the other state")
    func suspendAndResume() throws {
        let parts = Parts()
        let transfer = parts.transfer()
        var machine = Self.running(transfer)
        guard case .pause(let paused) = machine.suspend() else { Issue.record("expected .pause"); return }
        #expect(paused === transfer)
        #expect(machine.state == .suspended)
        guard case .none = machine.suspend() else { Issue.record("a second suspend changes nothing"); return }
        guard case .unpause(let unpaused) = machine.resume() else { Issue.record("expected .unpause"); return }
        #expect(unpaused === transfer)
        #expect(machine.state == .running)
    }

    @Test("cancel: before the start, while transferring, between transfers, after completion")
    func cancelEverywhere() throws {
        let parts = Parts()
        var unstarted = Machine()
        guard case .completeUnstarted = unstarted.cancel() else { Issue.record("expected .completeUnstarted"); return }
        #expect(unstarted.state == .canceling)
        guard case .none = unstarted.cancel() else { Issue.record("cancel is once"); return }

        let transfer = parts.transfer()
        var transferring = Self.running(transfer)
        guard case .stop(let stopped) = transferring.cancel() else { Issue.record("expected .stop"); return }
        #expect(stopped === transfer)

        var between = Self.running(transfer)
        let ended = between.transferEndsBetweenTransfers()
        #expect(ended === transfer)
        let timer = DispatchWorkItem {}
        let scheduled = between.retryScheduled(timer, after: nil)
        #expect(scheduled == 2)
        guard case .completeBetweenTransfers(let pending) = between.cancel() else {
            Issue.record("expected .completeBetweenTransfers")
            return
        }
        #expect(pending === timer)
        // Cancelled between transfers: the next one is dropped, and a retry's next attempt does not start.
        guard case .none = between.transferPrepared(transfer) else { Issue.record("expected .none"); return }
        let attemptStarted = between.attemptStarts(with: Request(url: parts.url))
        #expect(attemptStarted == nil)

        var done = Self.running(transfer)
        guard case .finish = done.complete(with: parts.outcome()) else { Issue.record("expected .finish"); return }
        guard case .none = done.cancel() else { Issue.record("a completed task ignores cancel"); return }
        guard case .none = done.resume() else { Issue.record("a completed task ignores resume"); return }
        guard case .none = done.suspend() else { Issue.record("a completed task ignores suspend"); return }
    }

    @Test("a transfer that succeeds while the task is suspended is held: resume() completes with it")
    func heldUntilResume() throws {
        let parts = Parts()
        let transfer = parts.transfer()
        var machine = Self.running(transfer)
        _ = machine.suspend()
        guard case .hold = machine.complete(with: parts.outcome()) else { Issue.record("expected .hold"); return }
        #expect(machine.state == .suspended)
        guard case .complete(let held) = machine.resume() else { Issue.record("expected .complete"); return }
        #expect(held.response?.statusCode == 200)
        guard case .finish(_, let wasCancelled, _) = machine.complete(with: held) else {
            Issue.record("expected .finish")
            return
        }
        #expect(!wasCancelled)
        #expect(machine.state == .completed)
        guard case .none = machine.complete(with: held) else { Issue.record("completion is exactly once"); return }
    }

    @Test("a held outcome is given up by cancel(): the task completes as cancelled")
    func heldThenCancelled() throws {
        let parts = Parts()
        var machine = Self.running(parts.transfer())
        _ = machine.suspend()
        _ = machine.complete(with: parts.outcome())
        guard case .complete(let held) = machine.cancel() else { Issue.record("expected .complete"); return }
        guard case .finish(_, let wasCancelled, _) = machine.complete(with: held) else {
            Issue.record("expected .finish")
            return
        }
        #expect(wasCancelled)
    }

    @Test("a failure while suspended completes at once: only a success waits for resume()")
    func failureWhileSuspended() throws {
        let parts = Parts()
        var machine = Self.running(parts.transfer())
        _ = machine.suspend()
        let failure = HeraldError(.timedOut, "timed out")
        guard case .finish(_, let wasCancelled, _) = machine.complete(with: parts.outcome(error: failure)) else {
            Issue.record("expected .finish")
            return
        }
        #expect(!wasCancelled)
        #expect(machine.state == .completed)
    }

    @Test("only the running transfer can end in another hop; the hop is recorded in the machine")
    func hopsOnlyFromTheRunningTransfer() throws {
        let parts = Parts()
        let transfer = parts.transfer()
        var machine = Self.running(transfer)
        let first = machine.hopEnds(sent: "GET /a", metrics: nil, isChallenge: false)
        #expect(first === transfer)
        #expect(machine.hops.visited == ["GET /a"])
        #expect(machine.currentTransfer == nil)
        let followed = machine.redirectFollowed(to: "GET /b")
        #expect(followed)
        #expect(machine.hops.redirectCount == 1)
        // A redirect back to a request this task sent is a loop, and is not counted.
        let loop = machine.redirectFollowed(to: "GET /a")
        #expect(!loop)
        #expect(machine.hops.redirectCount == 1)
        let next = parts.transfer()
        guard case .start(let started) = machine.transferPrepared(next, sendsCredential: true) else {
            Issue.record("expected .start")
            return
        }
        #expect(started === next)
        // A 401 answering a transfer that sent a credential is a refusal.
        _ = machine.hopEnds(sent: "GET /b", metrics: nil, isChallenge: true)
        #expect(machine.hops.authenticationFailures == 1)

        var cancelled = Self.running(transfer)
        _ = cancelled.cancel()
        let afterCancel = cancelled.transferEndsBetweenTransfers()
        #expect(afterCancel == nil)
    }

    @Test("a retry counts the attempt and starts its hops afresh; the attempt's request is kept")
    func retryAttempts() throws {
        let parts = Parts()
        var machine = Self.running(parts.transfer())
        _ = machine.hopEnds(sent: "GET /a", metrics: nil, isChallenge: false)
        _ = machine.redirectFollowed(to: "GET /b")
        _ = machine.transferPrepared(parts.transfer())
        _ = machine.transferEndsBetweenTransfers()
        let attempt = machine.retryScheduled(DispatchWorkItem {}, after: nil)
        #expect(attempt == 2)
        #expect(machine.hops.redirectCount == 0)
        #expect(machine.hops.visited.isEmpty)
        let stale = CachedResponse(
            response: HTTPResponse(url: parts.url, statusCode: 200, headers: [:]), data: Data("cached".utf8))
        machine.revalidates(stale, with: ["If-None-Match": "\"v1\""])
        let request = Request(url: parts.url)
        let started = machine.attemptStarts(with: request)
        #expect(started?.attempt == 2)
        #expect(started?.validators?["If-None-Match"] == "\"v1\"")
        #expect(machine.hops.attemptRequest?.url == parts.url)
        // Suspended before the delay ran out: the attempt starts, its transfer waits for resume().
        guard case .announce = machine.suspend() else { Issue.record("expected .announce"); return }
        let transfer = parts.transfer()
        guard case .wait = machine.transferPrepared(transfer) else { Issue.record("expected .wait"); return }
        guard case .startTransfer(let waiting) = machine.resume() else {
            Issue.record("expected .startTransfer")
            return
        }
        #expect(waiting === transfer)
    }

    #if DEBUG
        @Test("an impossible event fails loudly in a debug build: a second transfer prepared while one runs")
        func impossibleEventTraps() async {
            await #expect(processExitsWith: .failure) {
                var machine = TaskStateMachine<TaskStateMachineTests.FakeTransfer, TaskStateMachineTests.FakeDownload>()
                _ = machine.resume()
                _ = machine.transferPrepared(TaskStateMachineTests.FakeTransfer())
                _ = machine.transferPrepared(TaskStateMachineTests.FakeTransfer())
            }
        }

        @Test("an impossible event fails loudly in a debug build: a transfer ends twice")
        func transferEndingTwiceTraps() async {
            await #expect(processExitsWith: .failure) {
                var machine = TaskStateMachine<TaskStateMachineTests.FakeTransfer, TaskStateMachineTests.FakeDownload>()
                _ = machine.resume()
                _ = machine.transferPrepared(TaskStateMachineTests.FakeTransfer())
                _ = machine.transferEndsBetweenTransfers()
                _ = machine.transferEndsBetweenTransfers()
            }
        }
    #endif

    @Test("a data task becomes a download only while its transfer runs; the download task completes it")
    func becomingADownload() throws {
        let parts = Parts()
        let transfer = parts.transfer()
        let other = parts.transfer()
        let download = parts.downloadTask()
        var machine = Self.running(transfer)
        let becameWithOther = machine.becomeDownload(download, runningTransfer: other)
        #expect(!becameWithOther)
        #expect(machine.downloadTask == nil)
        let became = machine.becomeDownload(download, runningTransfer: transfer)
        #expect(became)
        guard case .finish(_, _, let finisher) = machine.complete(with: parts.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(finisher === download)
        #expect(machine.downloadTask == nil)

        var cancelled = Self.running(transfer)
        _ = cancelled.cancel()
        let becameAfterCancel = cancelled.becomeDownload(download, runningTransfer: transfer)
        #expect(!becameAfterCancel)
    }

    static func metrics(total: TimeInterval) -> TransferMetrics {
        TransferMetrics(
            startDate: Date(), nameLookup: 0, connect: 0, tlsHandshake: 0, timeToFirstByte: 0, total: total,
            redirectTime: 0, requestHeaderBytes: 0, requestBodyBytes: 0, responseHeaderBytes: 0, responseBodyBytes: 0,
            redirectCount: 0, connectionReused: false, remoteAddress: nil, remotePort: nil, localPort: nil,
            httpVersion: nil)
    }

    @Test("the report: the last response, the hops' metrics then the final one, Herald's redirect count, the error")
    func report() throws {
        let parts = Parts()
        var machine = Self.running(parts.transfer())
        let redirect = HTTPResponse(url: parts.url, statusCode: 302, headers: ["Location": "/b"])
        machine.responseArrived(redirect)
        #expect(machine.report.response?.statusCode == 302)
        _ = machine.hopEnds(sent: "GET /a", metrics: Self.metrics(total: 1), isChallenge: false)
        _ = machine.redirectFollowed(to: "GET /b")
        _ = machine.transferPrepared(parts.transfer())
        #expect(machine.hopMetrics.isEmpty, "no hop metrics before completion")
        var final = parts.outcome()
        final.metrics = Self.metrics(total: 2)
        guard case .finish(let reported, let wasCancelled, _) = machine.complete(with: final) else {
            Issue.record("expected .finish")
            return
        }
        #expect(!wasCancelled)
        #expect(reported.metrics?.redirectCount == 1)
        #expect(machine.report.metrics?.total == 2)
        #expect(machine.report.response?.statusCode == 200)
        #expect(machine.hopMetrics.map(\.total) == [1, 2])
        #expect(machine.hopMetrics.map(\.redirectCount) == [0, 1])
        #expect(machine.report.error == nil)
        let refused = HeraldError(.badServerResponse, "refused by the serializer", url: parts.url)
        _ = machine.completionReported(error: refused)
        #expect(machine.report.error?.code == .badServerResponse)
    }

    /// Counts calls from any thread; the callbacks under test only ever run inline here.
    final class CallCounter: Sendable {
        private let calls = Locked<[String]>([])
        func record(_ name: String) { calls.withLock { $0.append(name) } }
        var names: [String] { calls.withLock { $0 } }
    }

    @Test("the caller's callbacks: given at creation, joined by progress observers until completion, handed out once")
    func callbacks() throws {
        let parts = Parts()
        let counter = CallCounter()
        var machine = Machine(
            callbacks: TaskCallbacks(
                completion: { _, _, _ in counter.record("completion") },
                downloadProgress: { _ in counter.record("download") }))
        #expect(machine.progressHandler(upload: true) == nil)
        #expect(machine.progressHandler(upload: false) != nil)
        _ = machine.resume()
        _ = machine.transferPrepared(parts.transfer())
        let added = machine.progressObserverAdded(
            upload: false, onProgress: { _ in counter.record("observer progress") },
            onCompletion: { counter.record("observer completion") })
        #expect(added)
        let progress = TransferProgress(completed: 1, total: 2, task: nil, isFinished: true)
        machine.progressHandler(upload: false)?(progress)
        #expect(counter.names == ["download", "observer progress"])

        guard case .finish = machine.complete(with: parts.outcome()) else { Issue.record("expected .finish"); return }
        let lateObserver = machine.progressObserverAdded(
            upload: true, onProgress: { _ in counter.record("late") }, onCompletion: { counter.record("late") })
        #expect(!lateObserver, "an observer added after completion is refused: the counts are final")

        let handed = machine.completionReported(error: nil)
        handed.completion?(nil, nil, nil)
        #expect(counter.names == ["download", "observer progress", "observer completion", "completion"])
        #expect(handed.downloadProgress != nil)
        #expect(machine.progressHandler(upload: false) == nil, "handed out, none is kept")
    }

    @Test("resume data is requested once, only before completion, and its handler is handed out once")
    func resumeDataHandler() throws {
        let parts = Parts()
        var machine = Self.running(parts.transfer())
        let first = machine.resumeDataRequested { _ in }
        let second = machine.resumeDataRequested { _ in }
        #expect(first)
        #expect(!second, "one request at a time: the second caller gets nil at once")
        _ = machine.cancel()
        guard case .finish(_, let wasCancelled, _) = machine.complete(with: parts.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(wasCancelled)
        let afterCompletion = machine.resumeDataRequested { _ in }
        #expect(!afterCompletion)
        #expect(machine.resumeDataHandlerTaken() != nil)
        #expect(machine.resumeDataHandlerTaken() == nil)
    }

    @Test("a 304 answering a revalidation completes with the cached body and response; another status does not")
    func revalidation() throws {
        let parts = Parts()
        let stale = CachedResponse(
            response: HTTPResponse(url: parts.url, statusCode: 200, headers: ["ETag": "\"v1\""]),
            data: Data("cached".utf8))
        var machine = Machine()
        _ = machine.resume()
        machine.revalidates(stale, with: ["If-None-Match": "\"v1\""])
        _ = machine.transferPrepared(parts.transfer())
        let notModified = TransferOutcome(
            response: HTTPResponse(url: parts.url, statusCode: 304, headers: [:]), body: Data(), error: nil,
            metrics: nil)
        guard case .finish(let reported, _, _) = machine.complete(with: notModified) else {
            Issue.record("expected .finish")
            return
        }
        #expect(reported.response?.statusCode == 200)
        #expect(reported.body == Data("cached".utf8))
        #expect(machine.report.revalidating == nil)

        var fresh = Machine()
        _ = fresh.resume()
        fresh.revalidates(stale, with: ["If-None-Match": "\"v1\""])
        _ = fresh.transferPrepared(parts.transfer())
        guard case .finish(let changed, _, _) = fresh.complete(with: parts.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(changed.body == Data("body".utf8))
        #expect(changed.response?.statusCode == 200)
    }
}
