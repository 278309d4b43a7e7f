import Foundation
@testable import Herald
@testable import HeraldEngine
import HeraldNotifications
import Testing

/// The task state machine on its own: each event's answer in each state and the state it leaves, without an
/// engine, a server or a thread. The machine is built alone: its transfers and download tasks are plain objects.
@Suite("The task state machine")
struct TaskStateMachineTests {
    /// A transfer as the machine knows it: an object. No session, engine or libcurl.
    final class FakeTransfer {}
    /// A download task as the machine knows it.
    final class FakeDownload {}

    typealias Machine = TaskStateMachine<FakeTransfer, FakeDownload>

    static let url = URL(string: "http://127.0.0.1:9/never-sent")!

    static func outcome(status: Int = 200, error: HeraldError? = nil) -> TaskOutcome {
        let response = HTTPResponse(url: url, statusCode: status, headers: [:])
        return TaskOutcome(response: response, body: Data("body".utf8), error: error, metrics: nil)
    }

    static var failure: HeraldError { HeraldError(.timedOut, "timed out", url: url) }

    /// A machine that has started and runs `transfer`.
    static func running(_ transfer: FakeTransfer) -> Machine {
        var machine = Machine()
        _ = machine.resume()
        _ = machine.transferPrepared(transfer)
        return machine
    }

    /// Every state of the machine, as a test reaches it.
    enum Situation: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
        case notStarted, suspendedBetweenTransfers, suspendedTransferring, readyToStart, holding
        case runningBetweenTransfers, runningTransferring, canceling, completed

        var testDescription: String { rawValue }
    }

    /// A machine in `situation`, with the transfer it runs (or ran, or prepared).
    static func machine(in situation: Situation) -> (Machine, FakeTransfer) {
        let transfer = FakeTransfer()
        var machine = Machine()
        switch situation {
        case .notStarted:
            break
        case .runningBetweenTransfers:
            _ = machine.resume()
        case .suspendedBetweenTransfers:
            _ = machine.resume()
            _ = machine.suspend()
        case .readyToStart:
            _ = machine.resume()
            _ = machine.suspend()
            _ = machine.transferPrepared(transfer)
        case .runningTransferring:
            machine = running(transfer)
        case .suspendedTransferring:
            machine = running(transfer)
            _ = machine.suspend()
        case .holding:
            machine = running(transfer)
            _ = machine.suspend()
            _ = machine.complete(with: outcome())
        case .canceling:
            machine = running(transfer)
            _ = machine.cancel()
        case .completed:
            machine = running(transfer)
            _ = machine.complete(with: outcome())
        }
        return (machine, transfer)
    }

    /// An action's case name, without its data.
    static func name(_ action: Any) -> String {
        String(String(describing: action).prefix { $0 != "(" })
    }

    /// What an event answers in one state, and the state the task is in after it.
    struct Answer: Equatable, CustomStringConvertible {
        var action: String
        var state: TaskState
        var description: String { "\(action) → \(state)" }
    }

    static func answer(_ action: String, _ state: TaskState) -> Answer { Answer(action: action, state: state) }

    // MARK: - each event in each state

    @Test("resume() in every state", arguments: Situation.allCases)
    func resumeEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .notStarted: Self.answer("start", .running),
            .suspendedBetweenTransfers: Self.answer("announce", .running),
            .suspendedTransferring: Self.answer("unpause", .running),
            .readyToStart: Self.answer("startTransfer", .running),
            .holding: Self.answer("complete", .completed),
            .runningBetweenTransfers: Self.answer("none", .running),
            .runningTransferring: Self.answer("none", .running),
            .canceling: Self.answer("none", .canceling),
            .completed: Self.answer("none", .completed),
        ]
        var (machine, _) = Self.machine(in: situation)
        let action = machine.resume()
        #expect(Answer(action: Self.name(action), state: machine.taskState) == expected[situation])
    }

    @Test("suspend() in every state", arguments: Situation.allCases)
    func suspendEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .notStarted: Self.answer("none", .suspended),
            .suspendedBetweenTransfers: Self.answer("none", .suspended),
            .suspendedTransferring: Self.answer("none", .suspended),
            .readyToStart: Self.answer("none", .suspended),
            .holding: Self.answer("none", .suspended),
            .runningBetweenTransfers: Self.answer("announce", .suspended),
            .runningTransferring: Self.answer("pause", .suspended),
            .canceling: Self.answer("none", .canceling),
            .completed: Self.answer("none", .completed),
        ]
        var (machine, _) = Self.machine(in: situation)
        let action = machine.suspend()
        #expect(Answer(action: Self.name(action), state: machine.taskState) == expected[situation])
    }

    @Test(
        "cancel() in every state: stops a transfer in the engine, completes at once without one",
        arguments: Situation.allCases)
    func cancelEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .notStarted: Self.answer("complete", .completed),
            .suspendedBetweenTransfers: Self.answer("complete", .completed),
            .suspendedTransferring: Self.answer("stop", .canceling),
            .readyToStart: Self.answer("complete", .completed),
            .holding: Self.answer("complete", .completed),
            .runningBetweenTransfers: Self.answer("complete", .completed),
            .runningTransferring: Self.answer("stop", .canceling),
            .canceling: Self.answer("none", .canceling),
            .completed: Self.answer("none", .completed),
        ]
        var (machine, transfer) = Self.machine(in: situation)
        let action = machine.cancel()
        #expect(Answer(action: Self.name(action), state: machine.taskState) == expected[situation])
        switch action {
        case .stop(let stopped):
            #expect(stopped === transfer)
            #expect(machine.currentTransfer === transfer)
        case .complete(let completion, _):
            #expect(completion.wasCancelled)
            #expect(machine.currentTransfer == nil)
        case .none:
            break
        }
    }

    @Test(
        "resourceTimedOut in every state: completes with the error when nothing is in the engine, else stops it",
        arguments: Situation.allCases)
    func resourceTimedOutEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .notStarted: Self.answer("none", .suspended),
            .suspendedBetweenTransfers: Self.answer("complete", .completed),
            .suspendedTransferring: Self.answer("stop", .suspended),
            .readyToStart: Self.answer("complete", .completed),
            .holding: Self.answer("none", .suspended),
            .runningBetweenTransfers: Self.answer("complete", .completed),
            .runningTransferring: Self.answer("stop", .running),
            .canceling: Self.answer("none", .canceling),
            .completed: Self.answer("none", .completed),
        ]
        var (machine, _) = Self.machine(in: situation)
        let action = machine.resourceTimedOut(Self.failure)
        #expect(Answer(action: Self.name(action), state: machine.taskState) == expected[situation])
        if case .complete(let completion, _) = action {
            #expect(!completion.wasCancelled)
            #expect(completion.outcome.error?.code == .timedOut)
        }
    }

    @Test("complete(with:) a success in every state but the unstarted one", arguments: Situation.allCases)
    func completeWithSuccessEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .suspendedBetweenTransfers: Self.answer("hold", .suspended),
            .suspendedTransferring: Self.answer("hold", .suspended),
            .readyToStart: Self.answer("hold", .suspended),
            .holding: Self.answer("hold", .suspended),
            .runningBetweenTransfers: Self.answer("finish", .completed),
            .runningTransferring: Self.answer("finish", .completed),
            .canceling: Self.answer("finish", .completed),
            .completed: Self.answer("none", .completed),
        ]
        guard let answer = expected[situation] else { return }  // notStarted: an exit test below
        var (machine, _) = Self.machine(in: situation)
        let action = machine.complete(with: Self.outcome())
        #expect(Answer(action: Self.name(action), state: machine.taskState) == answer)
        #expect(machine.isHoldingOutcome == (answer.action == "hold"))
        if case .finish(let completion) = action {
            #expect(completion.wasCancelled == (situation == .canceling))
        }
    }

    @Test("complete(with:) a failure: only a success waits for a resume", arguments: Situation.allCases)
    func completeWithFailureEverywhere(_ situation: Situation) {
        guard situation != .notStarted else { return }
        var (machine, _) = Self.machine(in: situation)
        let action = machine.complete(with: Self.outcome(error: Self.failure))
        let expected = situation == .completed ? "none" : "finish"
        #expect(Self.name(action) == expected)
        #expect(machine.taskState == .completed)
    }

    @Test(
        "transferPrepared(_:) starts when running, waits when suspended, is dropped once cancelled",
        arguments: Situation.allCases)
    func transferPreparedEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .suspendedBetweenTransfers: Self.answer("wait", .suspended),
            .runningBetweenTransfers: Self.answer("start", .running),
            .canceling: Self.answer("none", .canceling),
            .completed: Self.answer("none", .completed),
        ]
        guard let answer = expected[situation] else { return }  // not between transfers: exit tests below
        var (machine, _) = Self.machine(in: situation)
        let next = FakeTransfer()
        let action = machine.transferPrepared(next)
        #expect(Answer(action: Self.name(action), state: machine.taskState) == answer)
        if situation == .runningBetweenTransfers { #expect(machine.currentTransfer === next) }
        if situation == .suspendedBetweenTransfers { #expect(machine.currentTransfer == nil) }
    }

    /// The states where a transfer is in the engine, and where it was stopped or is over.
    static let endings: [Situation: TaskState] = [
        .suspendedTransferring: .suspended, .runningTransferring: .running, .canceling: .canceling,
        .completed: .completed,
    ]

    @Test(
        "hopEnds: the transfer in the engine ends in another hop; once cancelled the task completes instead",
        arguments: Situation.allCases)
    func hopEndsEverywhere(_ situation: Situation) {
        guard let state = Self.endings[situation] else { return }
        var (machine, transfer) = Self.machine(in: situation)
        let response = HTTPResponse(url: Self.url, statusCode: 302, headers: ["Location": "/b"])
        let action = machine.hopEnds(sent: "GET /a", response: response, metrics: nil, isChallenge: false)
        #expect(machine.taskState == state)
        switch action {
        case .decide(let ended):
            #expect(situation == .suspendedTransferring || situation == .runningTransferring)
            #expect(ended === transfer)
            #expect(machine.currentTransfer == nil)
            #expect(machine.report.response?.statusCode == 302)
        case .complete:
            #expect(situation == .canceling || situation == .completed)
        }
    }

    @Test(
        "retryAsked: the failed transfer in the engine goes to the retrier; once cancelled the task completes",
        arguments: Situation.allCases)
    func retryAskedEverywhere(_ situation: Situation) {
        guard let state = Self.endings[situation] else { return }
        var (machine, _) = Self.machine(in: situation)
        let action = machine.retryAsked(response: nil, metrics: nil)
        #expect(machine.taskState == state)
        switch action {
        case .ask(let request, let attempt):
            #expect(situation == .suspendedTransferring || situation == .runningTransferring)
            #expect(request == nil)
            #expect(attempt == 1)
        case .complete:
            #expect(situation == .canceling || situation == .completed)
        }
    }

    @Test(
        "retryAskedAfterHop: a hop that ends the attempt goes to the retrier; once cancelled the task completes",
        arguments: Situation.allCases)
    func retryAskedAfterHopEverywhere(_ situation: Situation) {
        let expected: [Situation: Answer] = [
            .suspendedBetweenTransfers: Self.answer("ask", .suspended),
            .runningBetweenTransfers: Self.answer("ask", .running),
            .canceling: Self.answer("complete", .canceling),
            .completed: Self.answer("complete", .completed),
        ]
        guard let answer = expected[situation] else { return }  // not deciding a hop: exit tests below
        var (machine, _) = Self.machine(in: situation)
        let response = HTTPResponse(url: Self.url, statusCode: 401, headers: ["WWW-Authenticate": "Basic"])
        let action = machine.retryAskedAfterHop(response: response)
        #expect(Answer(action: Self.name(action), state: machine.taskState) == answer)
        if case .ask(let request, let attempt) = action {
            #expect(request == nil)
            #expect(attempt == 1)
            #expect(machine.report.response?.statusCode == 401)
        }
    }

    @Test(
        "connectivityWaitBegins: every wait is announced, a later one too; once cancelled the task completes",
        arguments: Situation.allCases)
    func connectivityWaitEverywhere(_ situation: Situation) {
        guard let state = Self.endings[situation] else { return }
        var (machine, _) = Self.machine(in: situation)
        let timer = DispatchWorkItem {}
        let action = machine.connectivityWaitBegins(timer, after: nil)
        #expect(machine.taskState == state)
        switch action {
        case .announceAndWait:
            #expect(situation == .suspendedTransferring || situation == .runningTransferring)
            // The wait's timer is the pending timer a cancel cancels; a second wait (the network back, then gone
            // again) is announced too: until then the task was activity again.
            _ = machine.attemptStarts(with: Request(url: Self.url))
            _ = machine.transferPrepared(FakeTransfer())
            if situation == .suspendedTransferring { _ = machine.resume() }
            guard case .announceAndWait = machine.connectivityWaitBegins(timer, after: nil) else {
                Issue.record("a second wait is announced")
                return
            }
            guard case .complete(_, let pending) = machine.cancel() else {
                Issue.record("expected .complete")
                return
            }
            #expect(pending === timer)
        case .complete:
            #expect(situation == .canceling || situation == .completed)
        }
    }

    /// The states between transfers, and where the task was stopped or is over.
    static let betweens: [Situation: TaskState] = [
        .suspendedBetweenTransfers: .suspended, .runningBetweenTransfers: .running, .canceling: .canceling,
        .completed: .completed,
    ]

    @Test("retryScheduled: counts the attempt between transfers; nothing once cancelled", arguments: Situation.allCases)
    func retryScheduledEverywhere(_ situation: Situation) {
        guard let state = Self.betweens[situation] else { return }
        var (machine, _) = Self.machine(in: situation)
        let action = machine.retryScheduled(DispatchWorkItem {}, after: nil)
        #expect(machine.taskState == state)
        switch action {
        case .schedule(let attempt):
            #expect(state == .running || state == .suspended)
            #expect(attempt == 2)
        case .none:
            #expect(state == .canceling || state == .completed)
        }
    }

    @Test("attemptStarts: between transfers an attempt starts; nothing once cancelled", arguments: Situation.allCases)
    func attemptStartsEverywhere(_ situation: Situation) {
        guard let state = Self.betweens[situation] else { return }
        var (machine, _) = Self.machine(in: situation)
        let action = machine.attemptStarts(with: Request(url: Self.url))
        #expect(machine.taskState == state)
        switch action {
        case .start(let attempt, let validators):
            #expect(state == .running || state == .suspended)
            #expect(attempt == 1)
            #expect(validators == nil)
            #expect(machine.hops.attemptRequest?.url == Self.url)
        case .none:
            #expect(state == .canceling || state == .completed)
        }
    }

    @Test("becomeDownload: only while the transfer it names is in the engine", arguments: Situation.allCases)
    func becomeDownloadEverywhere(_ situation: Situation) {
        var (machine, transfer) = Self.machine(in: situation)
        let download = FakeDownload()
        let becomes = situation == .runningTransferring || situation == .suspendedTransferring
        let withOther = machine.becomeDownload(download, runningTransfer: FakeTransfer())
        #expect(Self.name(withOther) == "none")
        let action = machine.becomeDownload(download, runningTransfer: transfer)
        #expect(Self.name(action) == (becomes ? "become" : "none"))
        #expect((machine.downloadTask === download) == becomes)
        if becomes {
            // Once a download, the transfer leads to no hop and no wait: its end completes the task.
            let response = HTTPResponse(url: Self.url, statusCode: 302, headers: [:])
            var hop = machine
            guard case .complete = hop.hopEnds(sent: "GET /a", response: response, metrics: nil, isChallenge: false)
            else { Issue.record("expected .complete"); return }
            // A retry is the download's next attempt: asked, and the task stays the download through it.
            var retry = machine
            guard case .ask = retry.retryAsked(response: nil, metrics: nil) else {
                Issue.record("expected .ask"); return
            }
            #expect(retry.downloadTask === download)
            guard case .schedule = retry.retryScheduled(DispatchWorkItem {}, after: nil) else {
                Issue.record("expected .schedule")
                return
            }
            guard case .complete(let cancelled, _) = retry.cancel() else { Issue.record("expected .complete"); return }
            #expect(cancelled.download === download)
            var wait = machine
            guard case .complete = wait.connectivityWaitBegins(DispatchWorkItem {}, after: nil) else {
                Issue.record("expected .complete")
                return
            }
        }
    }

    @Test("progressObserverAdded: joins until completion, refused after", arguments: Situation.allCases)
    func progressObserverEverywhere(_ situation: Situation) {
        var (machine, _) = Self.machine(in: situation)
        let action = machine.progressObserverAdded(upload: true, onProgress: { _ in }, onCompletion: {})
        #expect(Self.name(action) == (situation == .completed ? "finishNow" : "added"))
        #expect((machine.progressHandler(upload: true) != nil) == (situation != .completed))
    }

    @Test("resumeDataRequested: taken once before completion, answered with nil after", arguments: Situation.allCases)
    func resumeDataRequestedEverywhere(_ situation: Situation) {
        var (machine, _) = Self.machine(in: situation)
        let first = machine.resumeDataRequested { _ in }
        #expect(Self.name(first) == (situation == .completed ? "answerNil" : "cancel"))
        let second = machine.resumeDataRequested { _ in }
        #expect(Self.name(second) == "answerNil")
    }

    @Test("whenHoldingOutcome: runs at once only while an outcome is held", arguments: Situation.allCases)
    func holdWaiterEverywhere(_ situation: Situation) {
        var (machine, _) = Self.machine(in: situation)
        let action = machine.whenHoldingOutcome {}
        #expect(Self.name(action) == (situation == .holding ? "runNow" : "wait"))
    }

    @Test("responseArrived and redirectFollowed keep what they record in any state", arguments: Situation.allCases)
    func recordsEverywhere(_ situation: Situation) {
        var (machine, _) = Self.machine(in: situation)
        let state = machine.taskState
        machine.responseArrived(HTTPResponse(url: Self.url, statusCode: 201, headers: [:]))
        #expect(machine.report.response?.statusCode == 201)
        #expect(Self.name(machine.redirectFollowed(to: "GET /b")) == "follow")
        #expect(machine.hops.redirectCount == 1)
        #expect(machine.taskState == state)
    }

    @Test("the completed task's reports: resume data after a failure, the resume-data handler once, the callbacks once")
    func completedReports() {
        var (machine, _) = Self.machine(in: .runningTransferring)
        _ = machine.resumeDataRequested { _ in }
        _ = machine.complete(with: Self.outcome(error: Self.failure))
        guard case .answer = machine.resumeDataAnswered() else { Issue.record("expected .answer"); return }
        guard case .none = machine.resumeDataAnswered() else { Issue.record("handed out once"); return }
        machine.resumeDataMadeAfterFailure(Data("resume".utf8))
        #expect(machine.report.resumeDataAfterFailure == Data("resume".utf8))
        guard case .report = machine.completionReported(error: Self.failure) else { return }
        #expect(machine.report.error?.code == .timedOut)
    }

    @Test("a resume-data handler no download answered is handed out with the callbacks, for its run with nil")
    func unansweredResumeDataHandler() {
        var (machine, _) = Self.machine(in: .runningTransferring)
        _ = machine.resumeDataRequested { _ in }
        _ = machine.complete(with: Self.outcome(error: Self.failure))
        // The task completed as a data task (its download turned back): resumeDataAnswered never ran.
        guard case .report(let callbacks) = machine.completionReported(error: Self.failure) else {
            Issue.record("expected .report")
            return
        }
        #expect(callbacks.resumeData != nil)
    }

    // MARK: - scenarios

    @Test("a new task is suspended and not started; the first resume asks for the first transfer")
    func firstResume() throws {
        var machine = Machine()
        #expect(machine.taskState == .suspended)
        #expect(!machine.hasStarted)
        guard case .start(let validators) = machine.resume() else { Issue.record("expected .start"); return }
        #expect(validators == nil)
        #expect(machine.taskState == .running)
        #expect(machine.hasStarted)
        guard case .none = machine.resume() else { Issue.record("a second resume changes nothing"); return }
    }

    @Test("the prepared transfer starts when running, and waits for resume() when suspended")
    func preparedTransfer() throws {
        let first = FakeTransfer()
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

    @Test("cancel between transfers hands back the retry's timer; the next attempt then does not start")
    func cancelBetweenTransfers() throws {
        let transfer = FakeTransfer()
        var between = Self.running(transfer)
        guard case .ask = between.retryAsked(response: nil, metrics: nil) else { Issue.record("expected .ask"); return }
        let timer = DispatchWorkItem {}
        guard case .schedule(let attempt) = between.retryScheduled(timer, after: nil) else {
            Issue.record("expected .schedule")
            return
        }
        #expect(attempt == 2)
        let last = HTTPResponse(url: Self.url, statusCode: 503, headers: [:])
        between.responseArrived(last)
        guard case .complete(let completion, let pending) = between.cancel() else {
            Issue.record("expected .complete")
            return
        }
        #expect(pending === timer)
        #expect(completion.wasCancelled)
        #expect(completion.outcome.response?.statusCode == 503, "completes with the last response that arrived")
        guard case .none = between.transferPrepared(transfer) else { Issue.record("expected .none"); return }
        guard case .none = between.attemptStarts(with: Request(url: Self.url)) else {
            Issue.record("expected .none")
            return
        }
    }

    @Test("a transfer that succeeds while the task is suspended is held: resume() completes with it")
    func heldUntilResume() throws {
        var machine = Self.running(FakeTransfer())
        _ = machine.suspend()
        let waiter = machine.whenHoldingOutcome {}
        #expect(Self.name(waiter) == "wait")
        guard case .hold(let waiters) = machine.complete(with: Self.outcome()) else {
            Issue.record("expected .hold")
            return
        }
        #expect(waiters.count == 1, "those waiting for the hold are woken by it")
        #expect(machine.taskState == .suspended)
        guard case .complete(let completion) = machine.resume() else { Issue.record("expected .complete"); return }
        #expect(completion.outcome.response?.statusCode == 200)
        #expect(!completion.wasCancelled)
        #expect(machine.taskState == .completed)
        guard case .none = machine.complete(with: completion.outcome) else {
            Issue.record("completion is exactly once")
            return
        }
    }

    @Test("a held outcome is given up by cancel(): the task completes as cancelled")
    func heldThenCancelled() throws {
        var machine = Self.running(FakeTransfer())
        _ = machine.suspend()
        _ = machine.complete(with: Self.outcome())
        guard case .complete(let completion, let timer) = machine.cancel() else {
            Issue.record("expected .complete")
            return
        }
        #expect(completion.wasCancelled)
        #expect(timer == nil)
        #expect(machine.taskState == .completed)
    }

    @Test("only the running transfer can end in another hop; the hop is recorded in the machine")
    func hopsOnlyFromTheRunningTransfer() throws {
        let transfer = FakeTransfer()
        var machine = Self.running(transfer)
        let redirect = HTTPResponse(url: Self.url, statusCode: 302, headers: ["Location": "/b"])
        guard
            case .decide(let first) = machine.hopEnds(
                sent: "GET /a", response: redirect, metrics: nil, isChallenge: false)
        else { Issue.record("expected .decide"); return }
        #expect(first === transfer)
        #expect(machine.hops.visited == ["GET /a"])
        #expect(machine.currentTransfer == nil)
        guard case .follow = machine.redirectFollowed(to: "GET /b") else { Issue.record("expected .follow"); return }
        #expect(machine.hops.redirectCount == 1)
        // A redirect back to a request this task sent is a loop, and is not counted.
        guard case .loop = machine.redirectFollowed(to: "GET /a") else { Issue.record("expected .loop"); return }
        #expect(machine.hops.redirectCount == 1)
        let next = FakeTransfer()
        let sent = SentCredential(user: "u", password: "p", url: Self.url)
        guard case .start(let started) = machine.transferPrepared(next, credential: sent) else {
            Issue.record("expected .start")
            return
        }
        #expect(started === next)
        // A 401 answering a transfer that sent a credential is a refusal; one that sent none is not.
        let challenge = HTTPResponse(url: Self.url, statusCode: 401, headers: [:])
        _ = machine.hopEnds(sent: "GET /b", response: challenge, metrics: nil, isChallenge: true)
        #expect(machine.hops.authenticationFailures == 1)
        #expect(machine.hops.refusedCredentials == [sent])
        _ = machine.transferPrepared(FakeTransfer(), credential: nil)
        _ = machine.hopEnds(sent: "GET /b", response: challenge, metrics: nil, isChallenge: true)
        #expect(machine.hops.authenticationFailures == 1)
        #expect(machine.hops.refusedCredentials == [sent])
        // Refused at one origin, the same credential is not refused at another.
        let elsewhere = SentCredential(user: "u", password: "p", url: try #require(URL(string: "http://127.0.0.2:81/")))
        #expect(!machine.hops.refusedCredentials.contains(elsewhere))
    }

    @Test("a retry counts the attempt and starts its hops afresh; the attempt's request is kept")
    func retryAttempts() throws {
        let stale = CachedResponse(
            response: HTTPResponse(url: Self.url, statusCode: 200, headers: [:]), data: Data("cached".utf8))
        var machine = Machine()
        let revalidation = Machine.Revalidation(stale: stale, validators: ["If-None-Match": "\"v1\""])
        guard case .start(let validators) = machine.resume(revalidating: revalidation) else {
            Issue.record("expected .start")
            return
        }
        #expect(validators?["If-None-Match"] == "\"v1\"")
        _ = machine.transferPrepared(FakeTransfer())
        let redirect = HTTPResponse(url: Self.url, statusCode: 302, headers: [:])
        _ = machine.hopEnds(sent: "GET /a", response: redirect, metrics: nil, isChallenge: false)
        _ = machine.redirectFollowed(to: "GET /b")
        _ = machine.transferPrepared(FakeTransfer())
        _ = machine.retryAsked(response: nil, metrics: nil)
        guard case .schedule(let attempt) = machine.retryScheduled(DispatchWorkItem {}, after: nil) else {
            Issue.record("expected .schedule")
            return
        }
        #expect(attempt == 2)
        #expect(machine.hops.redirectCount == 0)
        #expect(machine.hops.visited.isEmpty)
        let request = Request(url: Self.url)
        guard case .start(let started, let sent) = machine.attemptStarts(with: request) else {
            Issue.record("expected .start")
            return
        }
        #expect(started == 2)
        #expect(sent?["If-None-Match"] == "\"v1\"")
        #expect(machine.hops.attemptRequest?.url == Self.url)
        _ = machine.transferPrepared(FakeTransfer())
        guard case .ask(let asked, let askedAttempt) = machine.retryAsked(response: nil, metrics: nil) else {
            Issue.record("expected .ask")
            return
        }
        #expect(asked?.url == Self.url)
        #expect(askedAttempt == 2)
        // Suspended before the delay ran out: the attempt starts, its transfer waits for resume().
        guard case .announce = machine.suspend() else { Issue.record("expected .announce"); return }
        let transfer = FakeTransfer()
        guard case .wait = machine.transferPrepared(transfer) else { Issue.record("expected .wait"); return }
        guard case .startTransfer(let waiting) = machine.resume() else {
            Issue.record("expected .startTransfer")
            return
        }
        #expect(waiting === transfer)
    }

    @Test("the resource timeout counts from the first transfer's preparation, kept across hops and attempts")
    func firstTransferStart() throws {
        var machine = Machine()
        _ = machine.resume()
        #expect(machine.hops.firstTransferStart == nil)
        let before = ContinuousClock.now
        _ = machine.transferPrepared(FakeTransfer())
        let start = try #require(machine.hops.firstTransferStart)
        #expect(before <= start && start <= ContinuousClock.now)
        let redirect = HTTPResponse(url: Self.url, statusCode: 302, headers: [:])
        _ = machine.hopEnds(sent: "GET /a", response: redirect, metrics: nil, isChallenge: false)
        _ = machine.redirectFollowed(to: "GET /b")
        _ = machine.transferPrepared(FakeTransfer())
        _ = machine.retryAsked(response: nil, metrics: nil)
        _ = machine.retryScheduled(DispatchWorkItem {}, after: nil)
        _ = machine.attemptStarts(with: Request(url: Self.url))
        _ = machine.transferPrepared(FakeTransfer())
        #expect(machine.hops.firstTransferStart == start)
        // What is left is read on the same clock; no timeout, or no transfer yet, leaves no limit.
        let left = try #require(SessionTask.timeLeft(of: 10, since: .now - .seconds(4)))
        #expect(left > 5 && left <= 6)
        #expect(SessionTask.timeLeft(of: 0, since: start) == nil)
        #expect(SessionTask.timeLeft(of: 10, since: nil) == nil)
    }

    @Test("a data task becomes a download only while its transfer runs; the download task completes it")
    func becomingADownload() throws {
        let transfer = FakeTransfer()
        let download = FakeDownload()
        var machine = Self.running(transfer)
        guard case .become = machine.becomeDownload(download, runningTransfer: transfer) else {
            Issue.record("expected .become")
            return
        }
        // Suspended and held, the outcome still completes as the download task.
        _ = machine.suspend()
        _ = machine.complete(with: Self.outcome())
        #expect(machine.downloadTask === download)
        guard case .complete(let completion) = machine.resume() else { Issue.record("expected .complete"); return }
        #expect(completion.download === download)
        #expect(machine.downloadTask == nil)

        var cancelled = Self.running(transfer)
        _ = cancelled.becomeDownload(download, runningTransfer: transfer)
        _ = cancelled.cancel()
        guard case .finish(let finished) = cancelled.complete(with: Self.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(finished.download === download)
        #expect(finished.wasCancelled)
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
        var machine = Self.running(FakeTransfer())
        let redirect = HTTPResponse(url: Self.url, statusCode: 302, headers: ["Location": "/b"])
        machine.responseArrived(redirect)
        #expect(machine.report.response?.statusCode == 302)
        _ = machine.hopEnds(sent: "GET /a", response: redirect, metrics: Self.metrics(total: 1), isChallenge: false)
        _ = machine.redirectFollowed(to: "GET /b")
        _ = machine.transferPrepared(FakeTransfer())
        #expect(machine.hopMetrics.isEmpty, "no hop metrics before completion")
        var final = Self.outcome()
        final.metrics = Self.metrics(total: 2)
        guard case .finish(let completion) = machine.complete(with: final) else {
            Issue.record("expected .finish")
            return
        }
        #expect(!completion.wasCancelled)
        #expect(completion.outcome.metrics?.redirectCount == 1)
        #expect(machine.report.metrics?.total == 2)
        #expect(machine.report.response?.statusCode == 200)
        #expect(machine.hopMetrics.map(\.total) == [1, 2])
        #expect(machine.hopMetrics.map(\.redirectCount) == [0, 1])
        #expect(machine.report.error == nil)
        let refused = HeraldError(.badServerResponse, "refused by the serializer", url: Self.url)
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
        let counter = CallCounter()
        var machine = Machine(
            callbacks: TaskCallbacks(
                completion: { _, _, _ in counter.record("completion") },
                downloadProgress: { _ in counter.record("download") }))
        #expect(machine.progressHandler(upload: true) == nil)
        #expect(machine.progressHandler(upload: false) != nil)
        _ = machine.resume()
        _ = machine.transferPrepared(FakeTransfer())
        let added = machine.progressObserverAdded(
            upload: false, onProgress: { _ in counter.record("observer progress") },
            onCompletion: { counter.record("observer completion") })
        #expect(Self.name(added) == "added")
        let progress = TransferProgress(completed: 1, total: 2, task: nil, isFinished: true)
        machine.progressHandler(upload: false)?(progress)
        #expect(counter.names == ["download", "observer progress"])

        guard case .finish = machine.complete(with: Self.outcome()) else { Issue.record("expected .finish"); return }
        let lateObserver = machine.progressObserverAdded(
            upload: true, onProgress: { _ in counter.record("late") }, onCompletion: { counter.record("late") })
        #expect(Self.name(lateObserver) == "finishNow", "an observer added after completion is refused")

        guard case .report(let handed) = machine.completionReported(error: nil) else { return }
        handed.completion?(nil, nil, nil)
        #expect(counter.names == ["download", "observer progress", "observer completion", "completion"])
        #expect(handed.downloadProgress != nil)
        #expect(machine.progressHandler(upload: false) == nil, "handed out, none is kept")
    }

    @Test("resume data is requested once, only before completion, and its handler is handed out once")
    func resumeDataHandler() throws {
        var machine = Self.running(FakeTransfer())
        guard case .cancel = machine.resumeDataRequested({ _ in }) else { Issue.record("expected .cancel"); return }
        guard case .answerNil = machine.resumeDataRequested({ _ in }) else {
            Issue.record("one request at a time: the second caller gets nil at once")
            return
        }
        _ = machine.cancel()
        guard case .finish(let completion) = machine.complete(with: Self.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(completion.wasCancelled)
        guard case .answerNil = machine.resumeDataRequested({ _ in }) else {
            Issue.record("expected .answerNil"); return
        }
        guard case .answer = machine.resumeDataAnswered() else { Issue.record("expected .answer"); return }
        guard case .none = machine.resumeDataAnswered() else { Issue.record("expected .none"); return }
    }

    @Test("a 304 answering a revalidation completes with the cached body and response; another status does not")
    func revalidation() throws {
        let stale = CachedResponse(
            response: HTTPResponse(url: Self.url, statusCode: 200, headers: ["ETag": "\"v1\""]),
            data: Data("cached".utf8))
        let revalidation = Machine.Revalidation(stale: stale, validators: ["If-None-Match": "\"v1\""])
        var machine = Machine()
        _ = machine.resume(revalidating: revalidation)
        _ = machine.transferPrepared(FakeTransfer())
        let notModified = TaskOutcome(
            response: HTTPResponse(url: Self.url, statusCode: 304, headers: [:]), body: Data(), error: nil,
            metrics: nil)
        guard case .finish(let completion) = machine.complete(with: notModified) else {
            Issue.record("expected .finish")
            return
        }
        #expect(completion.outcome.response?.statusCode == 200)
        #expect(completion.outcome.body == Data("cached".utf8))
        #expect(machine.report.revalidating == nil)

        var fresh = Machine()
        _ = fresh.resume(revalidating: revalidation)
        _ = fresh.transferPrepared(FakeTransfer())
        guard case .finish(let changed) = fresh.complete(with: Self.outcome()) else {
            Issue.record("expected .finish")
            return
        }
        #expect(changed.outcome.body == Data("body".utf8))
        #expect(changed.outcome.response?.statusCode == 200)
    }

    // MARK: - impossible events stop the process, in release builds too

    /// The states that are not between transfers: preparing a transfer, scheduling a retry or starting an
    /// attempt there is a bug.
    static let notBetweenTransfers: [Situation] = [
        .notStarted, .suspendedTransferring, .readyToStart, .holding, .runningTransferring,
    ]

    /// The states with no transfer in the engine (and not cancelled): a transfer ending there is a bug.
    static let noTransferInTheEngine: [Situation] = [
        .notStarted, .suspendedBetweenTransfers, .readyToStart, .holding, .runningBetweenTransfers,
    ]

    @Test("impossible: a transfer prepared while the task is not between transfers", arguments: notBetweenTransfers)
    func transferPreparedTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.transferPrepared(TaskStateMachineTests.FakeTransfer())
        }
    }

    @Test("impossible: a retry scheduled while the task is not between transfers", arguments: notBetweenTransfers)
    func retryScheduledTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.retryScheduled(DispatchWorkItem {}, after: nil)
        }
    }

    @Test("impossible: an attempt started while the task is not between transfers", arguments: notBetweenTransfers)
    func attemptStartsTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.attemptStarts(with: Request(url: TaskStateMachineTests.url))
        }
    }

    @Test("impossible: a hop ends with no transfer in the engine", arguments: noTransferInTheEngine)
    func hopEndsTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            let response = HTTPResponse(url: TaskStateMachineTests.url, statusCode: 302, headers: [:])
            _ = machine.hopEnds(sent: "GET /a", response: response, metrics: nil, isChallenge: false)
        }
    }

    @Test("impossible: a retry asked about with no transfer in the engine", arguments: noTransferInTheEngine)
    func retryAskedTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.retryAsked(response: nil, metrics: nil)
        }
    }

    @Test("impossible: a retry asked about after a hop the task was not deciding", arguments: notBetweenTransfers)
    func retryAskedAfterHopTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            let response = HTTPResponse(url: TaskStateMachineTests.url, statusCode: 401, headers: [:])
            _ = machine.retryAskedAfterHop(response: response)
        }
    }

    @Test("impossible: a wait for connectivity begins with no transfer in the engine", arguments: noTransferInTheEngine)
    func connectivityWaitTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.connectivityWaitBegins(DispatchWorkItem {}, after: nil)
        }
    }

    @Test("impossible: a transfer ends twice")
    func transferEndingTwiceTraps() async {
        await #expect(processExitsWith: .failure) {
            var (machine, _) = TaskStateMachineTests.machine(in: .runningTransferring)
            _ = machine.retryAsked(response: nil, metrics: nil)
            _ = machine.retryAsked(response: nil, metrics: nil)
        }
    }

    @Test("impossible: a task that never started completes with an outcome")
    func unstartedCompletionTraps() async {
        await #expect(processExitsWith: .failure) {
            var machine = TaskStateMachineTests.Machine()
            _ = machine.complete(with: TaskStateMachineTests.outcome())
        }
    }

    /// Every state but the last: reporting a completion there is a bug.
    static let notCompleted = Situation.allCases.filter { $0 != .completed }

    @Test("impossible: a completion reported before the task completed", arguments: notCompleted)
    func completionReportedTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.completionReported(error: nil)
        }
    }

    @Test("impossible: resume data answered before the task completed", arguments: notCompleted)
    func resumeDataAnsweredTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            _ = machine.resumeDataAnswered()
        }
    }

    @Test("impossible: resume data made after a failure before the task completed", arguments: notCompleted)
    func resumeDataMadeTraps(_ situation: Situation) async {
        await #expect(processExitsWith: .failure) { [situation] in
            var (machine, _) = TaskStateMachineTests.machine(in: situation)
            machine.resumeDataMadeAfterFailure(Data())
        }
    }
}
