import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Transfer state machine")
struct TransferStateMachineTests {
    typealias Machine = TransferStateMachine

    static let stopped = TransferError(.responseTooLarge, "The response body grew past the maximum.")

    // MARK: - the user's pause

    @Test("a pause while running asks curl to pause; accepted, the transfer is paused and resume continues curl")
    func pauseAndResume() {
        var machine = Machine()
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.pause() == .none)
        #expect(!machine.isIdleTimeoutRunning)
        // curl calls no callback of a transfer it paused; one that runs anyway holds its bytes.
        #expect(machine.callbackDidRun() == .pause)
        #expect(machine.readCallbackDidRun() == .pause)
        #expect(machine.unpause() == .continueCurl)
        #expect(machine.callbackDidRun() == .proceed)
        #expect(machine.isIdleTimeoutRunning)
        #expect(machine.unpause() == .none)
    }

    // MARK: - a streamed body's consumer

    @Test("a consumer behind pauses the write callback; its drain continues curl; the idle timeout doesn't count it")
    func consumerBehindAndDrained() {
        var machine = Machine()
        #expect(machine.consumerIsBehind() == true)
        #expect(!machine.isIdleTimeoutRunning)
        // Paused already: a second report changes nothing.
        #expect(machine.consumerIsBehind() == false)
        #expect(machine.consumerDidDrain() == .continueCurl)
        #expect(machine.isIdleTimeoutRunning)
        #expect(machine.consumerDidDrain() == .none)
        #expect(machine.callbackDidRun() == .proceed)
    }

    @Test("curl sending the request body while the consumer is behind leaves receiving paused for the drain")
    func readCallbackWhileConsumerBehind() {
        var machine = Machine()
        #expect(machine.consumerIsBehind() == true)
        #expect(machine.bodyResumeAction == .continueSendingOnly)
        // The write callback paused receiving only: curl goes on sending, and reads the body.
        #expect(machine.readCallbackDidRun() == .proceed)
        #expect(!machine.isIdleTimeoutRunning)
        #expect(machine.bodyResumeAction == .continueSendingOnly)
        // The drain is what continues receiving.
        #expect(machine.consumerDidDrain() == .continueCurl)
        #expect(machine.isIdleTimeoutRunning)
        #expect(machine.readCallbackDidRun() == .proceed)
    }

    @Test("the user's pause while the consumer is behind stands through the drain; their resume continues curl")
    func userPauseWhileConsumerBehind() {
        var machine = Machine()
        #expect(machine.consumerIsBehind() == true)
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.consumerDidDrain() == .none)
        #expect(machine.unpause() == .continueCurl)
        // curl hands the kept chunk back: the write callback asks the consumer again.
        #expect(machine.callbackDidRun() == .proceed)
        #expect(machine.consumerIsBehind() == true)
    }

    @Test("curl's end while the consumer is behind finishes the transfer once")
    func endWhileConsumerBehind() {
        var machine = Machine()
        machine.sinkDidBeginResponse()
        #expect(machine.consumerIsBehind() == true)
        guard case .finish(let sinkDidBegin) = machine.curlDidFinish(needsDisposition: false) else {
            Issue.record("curl's end did not finish the transfer")
            return
        }
        #expect(sinkDidBegin)
        #expect(machine.finish() == .none)
        #expect(machine.consumerDidDrain() == .none)
    }

    @Test(
        "a pause curl refuses before the connection exists is applied by the first callback; each direction holds",
        arguments: [true, false])
    func pendingPauseAppliedByFirstCallback(writeFirst: Bool) {
        var machine = Machine()
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: false)
        #expect(machine.progressDidTick() == .tryPause)
        #expect((writeFirst ? machine.callbackDidRun() : machine.readCallbackDidRun()) == .pause)
        #expect(machine.progressDidTick() == .proceed)
        #expect(!machine.isIdleTimeoutRunning)
        // A callback's pause code holds its direction only: the other direction's callback pauses too, and
        // again (curl calls it again for the same bytes).
        #expect((writeFirst ? machine.readCallbackDidRun() : machine.callbackDidRun()) == .pause)
        #expect(machine.readCallbackDidRun() == .pause)
        #expect(machine.callbackDidRun() == .pause)
        #expect(machine.unpause() == .continueCurl)
        // The resume's continue hands the kept bytes back in both directions.
        #expect(machine.callbackDidRun() == .proceed)
        #expect(machine.readCallbackDidRun() == .proceed)
    }

    @Test("a pending pause is tried again at each progress tick until curl takes it")
    func pendingPauseAppliedByProgress() {
        var machine = Machine()
        _ = machine.pause()
        machine.didTryPause(accepted: false)
        // A pause only pending is a suspension all the same: silence doesn't count (a connect has its own timeout).
        #expect(!machine.isIdleTimeoutRunning)
        #expect(machine.progressDidTick() == .tryPause)
        machine.didTryPause(accepted: false)
        #expect(machine.progressDidTick() == .tryPause)
        machine.didTryPause(accepted: true)
        #expect(machine.progressDidTick() == .proceed)
        #expect(!machine.isIdleTimeoutRunning)
        #expect(machine.unpause() == .continueCurl)
    }

    @Test("sent again on a fresh connection, a paused transfer's pause is pending again; a running one goes on")
    func freshConnectionKeepsThePause() {
        var paused = Machine()
        _ = paused.pause()
        paused.didTryPause(accepted: true)
        let suspended = paused.startsAgainOnFreshConnection()
        #expect(suspended)
        #expect(paused.isPausePending)
        // The resume that unparks it: curl has nothing paused to continue.
        #expect(paused.unpause() == .none)
        let resumed = paused.startsAgainOnFreshConnection()
        #expect(!resumed)
        var running = Machine()
        let goesOn = running.startsAgainOnFreshConnection()
        #expect(!goesOn)
        #expect(running.callbackDidRun() == .proceed)
    }

    @Test("a resume before a pending pause was applied cancels it without touching curl")
    func resumeCancelsPendingPause() {
        var machine = Machine()
        _ = machine.pause()
        machine.didTryPause(accepted: false)
        #expect(machine.unpause() == .none)
        #expect(machine.callbackDidRun() == .proceed)
        #expect(machine.progressDidTick() == .proceed)
        // A new pause tries curl again.
        #expect(machine.pause() == .pauseCurl)
    }

    // MARK: - the task's answer

    @Test("a response that needs an answer is asked about once; allowing it continues curl, and it stays allowed")
    func dispositionAskedOnceThenAllowed() {
        var machine = Machine()
        #expect(machine.callbackDidRun() == .proceed)
        #expect(machine.responseNeedsDisposition() == .askDelegate)
        #expect(machine.isAwaitingDisposition)
        #expect(!machine.isIdleTimeoutRunning)
        #expect(machine.responseNeedsDisposition() == .keepWaiting)
        #expect(machine.allowResponse() == .continueCurl)
        #expect(!machine.isAwaitingDisposition)
        #expect(machine.responseNeedsDisposition() == .proceed)
        #expect(machine.allowResponse() == .none)
    }

    @Test("an answer stands for the next response head of the transfer, and the sink begins again")
    func answerStandsAcrossResponseHeads() {
        var machine = Machine()
        _ = machine.responseNeedsDisposition()
        _ = machine.allowResponse()
        #expect(!machine.sinkDidBegin)
        machine.sinkDidBeginResponse()
        #expect(machine.sinkDidBegin)
        machine.responseHeadDidStart()
        #expect(!machine.sinkDidBegin)
        #expect(machine.responseNeedsDisposition() == .proceed)
    }

    @Test("without an answer, a new response head begins the sink again and is asked about")
    func newHeadWithoutAnswer() {
        var machine = Machine()
        machine.sinkDidBeginResponse()
        machine.responseHeadDidStart()
        #expect(!machine.sinkDidBegin)
        #expect(machine.responseNeedsDisposition() == .askDelegate)
    }

    @Test("a resume while the answer is awaited does not continue curl: the answer does")
    func unpauseWhileAwaitingDisposition() {
        var machine = Machine()
        _ = machine.responseNeedsDisposition()
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.unpause() == .none)
        #expect(machine.isAwaitingDisposition)
        #expect(machine.allowResponse() == .continueCurl)
    }

    @Test("allowing while the user has paused waits for the user's resume")
    func allowWhileUserPaused() {
        var machine = Machine()
        _ = machine.responseNeedsDisposition()
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.allowResponse() == .none)
        #expect(!machine.isAwaitingDisposition)
        #expect(machine.unpause() == .continueCurl)
        #expect(machine.responseNeedsDisposition() == .proceed)
    }

    @Test("a response met while user-paused is asked about, and still waits for the user's resume")
    func dispositionWhilePaused() {
        var machine = Machine()
        _ = machine.pause()
        machine.didTryPause(accepted: true)
        #expect(machine.responseNeedsDisposition() == .askDelegate)
        #expect(machine.allowResponse() == .none)
        #expect(machine.unpause() == .continueCurl)
    }

    // MARK: - a held result

    @Test("a body-less response that needs an answer holds curl's result; allowing it finishes")
    func bodylessResponseFinishedOnAllow() {
        var machine = Machine()
        #expect(machine.curlDidFinish(needsDisposition: true).summary == .holdAndAskDelegate)
        #expect(machine.isHoldingResult)
        #expect(machine.isAwaitingDisposition)
        #expect(!machine.isFinished)
        #expect(machine.allowResponse() == .finishHeldResult)
        #expect(machine.isFinished)
        #expect(!machine.isHoldingResult)
        #expect(machine.finish() == .none)
    }

    @Test("a pause after the result was held holds the completion until the user resumes")
    func pauseAfterHeldResult() {
        var machine = Machine()
        _ = machine.curlDidFinish(needsDisposition: true)
        // Out of curl: no curl_easy_pause.
        #expect(machine.pause() == .none)
        #expect(machine.allowResponse() == .none)
        #expect(machine.isHoldingResult)
        #expect(!machine.isAwaitingDisposition)
        #expect(!machine.isFinished)
        #expect(machine.unpause() == .finishHeldResult)
        #expect(machine.isFinished)
    }

    @Test("a resume before the answer only lifts the user's hold; the answer then finishes")
    func resumeBeforeAnswerOnHeldResult() {
        var machine = Machine()
        _ = machine.curlDidFinish(needsDisposition: true)
        _ = machine.pause()
        #expect(machine.unpause() == .none)
        #expect(machine.allowResponse() == .finishHeldResult)
    }

    @Test("a user pause at curl's end is carried into the held result")
    func pausedAtCurlsEnd() {
        var machine = Machine()
        _ = machine.pause()
        machine.didTryPause(accepted: true)
        #expect(machine.curlDidFinish(needsDisposition: true).summary == .holdAndAskDelegate)
        #expect(machine.allowResponse() == .none)
        #expect(machine.unpause() == .finishHeldResult)
    }

    @Test("curl ending while the answer is awaited holds the result without asking again")
    func curlEndsWhileAwaiting() {
        var machine = Machine()
        _ = machine.responseNeedsDisposition()
        #expect(machine.curlDidFinish(needsDisposition: true).summary == .hold)
        #expect(machine.allowResponse() == .finishHeldResult)
    }

    @Test("curl failing while the answer is awaited finishes at once")
    func curlFailsWhileAwaiting() {
        var machine = Machine()
        _ = machine.responseNeedsDisposition()
        #expect(machine.curlDidFinish(needsDisposition: false).summary == .finish(sinkDidBegin: false))
        #expect(machine.allowResponse() == .none)
    }

    @Test("a response already allowed, or whose body began, is never held")
    func allowedResponseNotHeld() {
        var allowed = Machine()
        _ = allowed.responseNeedsDisposition()
        _ = allowed.allowResponse()
        #expect(allowed.curlDidFinish(needsDisposition: true).summary == .finish(sinkDidBegin: false))

        var begun = Machine()
        begun.sinkDidBeginResponse()
        #expect(begun.curlDidFinish(needsDisposition: false).summary == .finish(sinkDidBegin: true))
    }

    // MARK: - abort

    @Test("an abort stops every callback and replaces curl's result; the first reason stands")
    func abortReplacesResult() {
        var machine = Machine()
        machine.abort(with: Self.stopped)
        machine.abort(with: TransferError(.timedOut, "later"))
        #expect(machine.abortError?.code == .responseTooLarge)
        #expect(machine.callbackDidRun() == .abort)
        #expect(machine.progressDidTick() == .abort)
        #expect(machine.curlDidFinish(needsDisposition: true).summary == .fail(.responseTooLarge))
        #expect(machine.isFinished)
    }

    @Test("a pending pause does not outlive an abort, but curl still obeys a pause until its end")
    func pauseAfterAbort() {
        var machine = Machine()
        _ = machine.pause()
        machine.didTryPause(accepted: false)
        machine.abort(with: Self.stopped)
        #expect(machine.callbackDidRun() == .abort)
        #expect(machine.unpause() == .none)
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.pause() == .none)
        #expect(machine.unpause() == .continueCurl)
    }

    // MARK: - the end

    @Test("finish is delivered exactly once, whichever way the transfer ends")
    func finishExactlyOnce() {
        var cancelled = Machine()
        #expect(cancelled.finish() == .finish(sinkDidBegin: false))
        #expect(cancelled.finish() == .none)
        #expect(cancelled.curlDidFinish(needsDisposition: false).summary == .none)

        var done = Machine()
        done.sinkDidBeginResponse()
        #expect(done.curlDidFinish(needsDisposition: false).summary == .finish(sinkDidBegin: true))
        #expect(done.finish() == .none)

        var held = Machine()
        _ = held.curlDidFinish(needsDisposition: true)
        #expect(held.curlDidFinish(needsDisposition: true).summary == .none)
        #expect(held.finish() == .finish(sinkDidBegin: false))
        #expect(held.allowResponse() == .none)
        #expect(held.unpause() == .none)
    }

    @Test("a finished transfer ignores pauses, answers and callbacks")
    func finishedIgnoresEverything() {
        var machine = Machine()
        _ = machine.finish()
        #expect(machine.pause() == .none)
        #expect(machine.unpause() == .none)
        #expect(machine.allowResponse() == .none)
        #expect(machine.callbackDidRun() == .abort)
        #expect(!machine.isAwaitingDisposition)
        #expect(!machine.isHoldingResult)
    }
}

extension TransferStateMachine.CurlFinishAction {
    /// The action with a failure reduced to its code, so that a test can compare it (errors are not
    /// `Equatable`).
    fileprivate var summary: Summary {
        switch self {
        case .none: .none
        case .holdAndAskDelegate: .holdAndAskDelegate
        case .hold: .hold
        case .fail(let error): .fail(error.code)
        case .finish(let sinkDidBegin): .finish(sinkDidBegin: sinkDidBegin)
        }
    }

    fileprivate enum Summary: Equatable {
        case none
        case holdAndAskDelegate
        case hold
        case fail(TransferError.Code)
        case finish(sinkDidBegin: Bool)
    }
}
