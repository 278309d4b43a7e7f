/// The life of one ``Transfer`` as a value: the user's pause, the task's answer to the response
/// (``TransferRequest/asksForResponseDisposition``), a result held for that answer, an abort of ours, and
/// the end.
///
/// Each event is a `mutating` function that moves to the next state and returns what the transfer must
/// do; the transfer does it afterwards. The machine holds no C handles. Loop thread only, like its transfer.
///
/// `running` ⇄ `pausePending` → `paused` ⇄ `running`; `running` ⇄ `waitingForConsumer` (a streamed body's
/// consumer is behind); `running` → `awaitingDisposition` → `running`; a
/// body-less response that needs an answer → `heldForDisposition` → (`heldForResume` →) `finished`; a
/// callback's abort → `aborted` → `finished`; every state → `finished`, once.
struct TransferStateMachine {
    private enum State {
        /// curl moves bytes, or is still resolving and connecting.
        case running(ResponseStage)
        /// The user paused, but curl_easy_pause fails before a connection exists, so the pause is
        /// remembered and applied from the next write, read or progress callback.
        case pausePending(ResponseStage)
        /// The user paused and curl holds the transfer.
        case paused(ResponseStage)
        /// The write callback returned its pause code because a streamed body's consumer is above its high
        /// watermark; curl keeps the chunk. Not the user's pause: it posts nothing, and the consumer's drain
        /// below its low watermark continues the transfer (``consumerDidDrain()``).
        case waitingForConsumer(ResponseStage)
        /// The task was asked when the head ended; a body byte that comes before its answer pauses the write
        /// callback, and curl keeps that chunk. A user pause is separate: an answer never undoes it.
        case awaitingDisposition(isUserPaused: Bool)
        /// curl finished, successfully, a response whose body never reached the write callback; the
        /// transfer is out of curl and its completion waits for the task's answer (and the user's resume).
        case heldForDisposition(isUserPaused: Bool)
        /// The task allowed a held response while the user had paused: the user's resume finishes it.
        case heldForResume
        /// A callback told curl to stop; curl's result is replaced by `error`. The transfer still obeys a
        /// user pause until curl reports its end.
        case aborted(TransferError, isUserPaused: Bool)
        /// Reported to the delegate; nothing more happens.
        case finished
    }

    private var state = State.running(.head)

    // MARK: - the user

    /// The user suspended the task.
    mutating func pause() -> PauseAction {
        switch state {
        case .running, .pausePending, .waitingForConsumer, .awaitingDisposition(isUserPaused: false),
            .aborted(_, isUserPaused: false):
            // A write callback paused for the task's answer stops receiving only, so curl is paused here
            // too; an aborted transfer runs until curl reports its end, and obeys the pause meanwhile.
            return .pauseCurl
        case .heldForDisposition(isUserPaused: false):
            // The transfer is over on the wire and out of curl; holding its completion is the pause.
            state = .heldForDisposition(isUserPaused: true)
            return .none
        case .paused, .awaitingDisposition(isUserPaused: true), .heldForDisposition(isUserPaused: true),
            .heldForResume, .aborted(_, isUserPaused: true), .finished:
            return .none
        }
    }

    /// Reports whether `curl_easy_pause(CURLPAUSE_ALL)`, asked for by ``PauseAction/pauseCurl`` or
    /// ``ProgressAction/tryPause``, took effect.
    mutating func didTryPause(accepted: Bool) {
        switch state {
        case .running(let stage), .pausePending(let stage):
            // No connection yet (CURLE_BAD_FUNCTION_ARGUMENT): apply it from the first callback.
            state = accepted ? .paused(stage) : .pausePending(stage)
        case .waitingForConsumer(let stage):
            // The user's resume continues curl; the write callback then pauses again if the consumer is still
            // behind.
            if accepted { state = .paused(stage) }
        case .awaitingDisposition(isUserPaused: false):
            if accepted { state = .awaitingDisposition(isUserPaused: true) }
        case .aborted(let error, isUserPaused: false):
            if accepted { state = .aborted(error, isUserPaused: true) }
        case .paused, .awaitingDisposition, .heldForDisposition, .heldForResume, .aborted, .finished:
            break
        }
    }

    /// The user resumed the task. ``ContinueAction/continueCurl`` passes buffered data to the write callback synchronously,
    /// inside `curl_easy_pause`, so the write callback runs before it returns — in the state set here.
    mutating func unpause() -> ContinueAction {
        switch state {
        case .pausePending(let stage):
            state = .running(stage)
            return .none
        case .paused(let stage):
            state = .running(stage)
            return .continueCurl
        case .awaitingDisposition(isUserPaused: true):
            // Still waiting for the task's answer to the response: that answer unpauses.
            state = .awaitingDisposition(isUserPaused: false)
            return .none
        case .heldForDisposition(isUserPaused: true):
            state = .heldForDisposition(isUserPaused: false)
            return .none
        case .heldForResume:
            state = .finished
            return .finishHeldResult
        case .aborted(let error, isUserPaused: true):
            state = .aborted(error, isUserPaused: false)
            return .continueCurl
        case .running, .waitingForConsumer, .awaitingDisposition(isUserPaused: false),
            .heldForDisposition(isUserPaused: false), .aborted(_, isUserPaused: false), .finished:
            return .none
        }
    }

    // MARK: - a streamed body's consumer

    /// The write callback found the streamed body's consumer above its high watermark: returns whether it
    /// pauses (it does while curl runs the transfer normally).
    mutating func consumerIsBehind() -> Bool {
        guard case .running(let stage) = state else { return false }
        state = .waitingForConsumer(stage)
        return true
    }

    /// The consumer drained below its low watermark. Outside curl callbacks. A user's pause meanwhile
    /// stands: their resume continues the transfer.
    mutating func consumerDidDrain() -> ContinueAction {
        guard case .waitingForConsumer(let stage) = state else { return .none }
        state = .running(stage)
        return .continueCurl
    }

    // MARK: - a streamed request body's reader

    /// The read callback paused sending for want of a streamed body's bytes, and they arrived: what curl may
    /// continue. Not while the user pauses (their resume continues both directions); receiving stays paused
    /// while a streamed response's consumer is behind or the task's answer is awaited.
    var bodyResumeAction: BodyResumeAction {
        switch state {
        case .running, .pausePending: .continueAll
        case .waitingForConsumer, .awaitingDisposition(isUserPaused: false): .continueSendingOnly
        case .paused, .awaitingDisposition(isUserPaused: true), .heldForDisposition, .heldForResume, .aborted,
            .finished:
            .none
        }
    }

    // MARK: - the task's answer

    /// The header callback (at the end of a final head) or the write callback met a response that needs the
    /// task's answer (``TransferRequest/asksForDisposition(status:headers:)``).
    mutating func responseNeedsDisposition() -> DispositionAction {
        switch state {
        case .running(let stage), .pausePending(let stage), .paused(let stage), .waitingForConsumer(let stage):
            guard !stage.isAllowed else { return .proceed }
            // Wait for the task's answer without blocking the loop: curl keeps this chunk and hands it
            // back when the transfer is unpaused.
            if case .paused = state {
                state = .awaitingDisposition(isUserPaused: true)
            } else {
                state = .awaitingDisposition(isUserPaused: false)
            }
            return .askDelegate
        case .awaitingDisposition:
            return .keepWaiting
        case .heldForDisposition, .heldForResume, .aborted, .finished:
            return .proceed
        }
    }

    /// The task allowed the response: continue, unless the user suspended the task meanwhile — then
    /// their resume continues it. Outside curl callbacks.
    mutating func allowResponse() -> ContinueAction {
        switch state {
        case .awaitingDisposition(isUserPaused: false):
            // Passes on the chunk curl kept when the write callback paused, synchronously, then goes on.
            state = .running(.allowed)
            return .continueCurl
        case .awaitingDisposition(isUserPaused: true):
            state = .paused(.allowed)
            return .none
        case .heldForDisposition(isUserPaused: false):
            state = .finished
            return .finishHeldResult
        case .heldForDisposition(isUserPaused: true):
            state = .heldForResume
            return .none
        case .running, .pausePending, .paused, .waitingForConsumer, .heldForResume, .aborted, .finished:
            return .none
        }
    }

    // MARK: - curl's callbacks

    /// The read callback runs (a connection exists): curl sends the request body. Receiving stays paused while a
    /// streamed response's consumer is behind: curl goes on sending, and the consumer's drain continues
    /// receiving (``consumerDidDrain()``). Otherwise as the write callback.
    mutating func readCallbackDidRun() -> CallbackAction {
        if case .waitingForConsumer = state { return .proceed }
        return callbackDidRun()
    }

    /// The write callback runs (a connection exists); the read callback, through ``readCallbackDidRun()``.
    mutating func callbackDidRun() -> CallbackAction {
        switch state {
        case .pausePending(let stage):
            // A suspend arrived before the connection existed; curl keeps this chunk and hands it back
            // when the transfer is unpaused.
            state = .paused(stage)
            return .pause
        case .paused:
            // curl calls neither callback once it took the pause; one that runs means the pause was a callback's
            // pause code (a pending pause applied), which holds that callback's direction only: this callback
            // holds its own, and the user's resume continues both.
            return .pause
        case .aborted, .finished:
            return .abort
        case .waitingForConsumer(let stage):
            // curl hands back the kept chunk (a user's resume continued it): the write callback asks the
            // consumer again.
            state = .running(stage)
            return .proceed
        case .running, .awaitingDisposition, .heldForDisposition, .heldForResume:
            return .proceed
        }
    }

    /// The progress callback runs.
    func progressDidTick() -> ProgressAction {
        switch state {
        case .pausePending: .tryPause
        case .aborted, .finished: .abort
        case .running, .paused, .waitingForConsumer, .awaitingDisposition, .heldForDisposition, .heldForResume:
            .proceed
        }
    }

    /// A status line starts a new response head: an interim 1xx, a 401 curl answers itself, or the final
    /// one. The sink is told again at the next body byte; the task's answer, once given, stands.
    mutating func responseHeadDidStart() {
        updateStage(\.restarted)
    }

    /// The sink was told about the current response.
    mutating func sinkDidBeginResponse() {
        updateStage(\.begun)
    }

    /// Moves the response stage on in the states that track one; the others have no stage to move.
    private mutating func updateStage(_ next: (ResponseStage) -> ResponseStage) {
        switch state {
        case .running(let stage): state = .running(next(stage))
        case .pausePending(let stage): state = .pausePending(next(stage))
        case .paused(let stage): state = .paused(next(stage))
        case .waitingForConsumer(let stage): state = .waitingForConsumer(next(stage))
        case .awaitingDisposition, .heldForDisposition, .heldForResume, .aborted, .finished: break
        }
    }

    /// A callback stops the transfer because of `error` (its return value makes curl stop); the first
    /// reason stands.
    mutating func abort(with error: TransferError) {
        switch state {
        case .running, .pausePending, .waitingForConsumer, .awaitingDisposition(isUserPaused: false):
            state = .aborted(error, isUserPaused: false)
        case .paused, .awaitingDisposition(isUserPaused: true):
            state = .aborted(error, isUserPaused: true)
        case .heldForDisposition, .heldForResume, .aborted, .finished:
            break
        }
    }

    // MARK: - the end

    /// curl reports the transfer's end. `needsDisposition`: it succeeded, and its response needs the
    /// task's answer.
    mutating func curlDidFinish(needsDisposition: Bool) -> CurlFinishAction {
        switch state {
        case .running(let stage), .pausePending(let stage), .paused(let stage), .waitingForConsumer(let stage):
            guard needsDisposition, stage == .head else {
                state = .finished
                return .finish(sinkDidBegin: stage.didBegin)
            }
            // A response without a body never reached the write callback: ask now, finish on the answer.
            // A pause still pending is dropped: no callback is left to apply it.
            if case .paused = state {
                state = .heldForDisposition(isUserPaused: true)
            } else {
                state = .heldForDisposition(isUserPaused: false)
            }
            return .holdAndAskDelegate
        case .awaitingDisposition(let isUserPaused):
            guard needsDisposition else {
                state = .finished
                return .finish(sinkDidBegin: false)
            }
            state = .heldForDisposition(isUserPaused: isUserPaused)
            return .hold
        case .aborted(let error, _):
            state = .finished
            return .fail(error)
        case .heldForDisposition, .heldForResume, .finished:
            return .none
        }
    }

    /// The transfer ends for a reason of ours (cancelled, invalid, a sink that can't open), or is reported
    /// after curl's end. Exactly once.
    mutating func finish() -> FinishAction {
        let sinkDidBegin = self.sinkDidBegin
        guard !isFinished else { return .none }
        state = .finished
        return .finish(sinkDidBegin: sinkDidBegin)
    }

    // MARK: - queries

    /// Whether the task's answer to the response is awaited (curl paused in the write callback, or the
    /// result held).
    var isAwaitingDisposition: Bool {
        switch state {
        case .awaitingDisposition, .heldForDisposition: true
        default: false
        }
    }

    /// Whether curl is done with the transfer but its completion is held for the task or the user.
    var isHoldingResult: Bool {
        switch state {
        case .heldForDisposition, .heldForResume: true
        default: false
        }
    }

    /// Whether the sink has been told about the current response (it is, at its first body byte).
    var sinkDidBegin: Bool { stage?.didBegin ?? false }

    /// Whether silence counts against the idle timeout: not while the user, the task or a streamed body's
    /// consumer holds the transfer — a pause still pending included (a transfer waiting for a connection, which
    /// curl can't pause yet, is suspended all the same).
    var isIdleTimeoutRunning: Bool {
        switch state {
        case .running: true
        default: false
        }
    }

    /// curl ended the transfer and it is sent again on a fresh connection: libcurl forgets a pause when it
    /// connects again, so a user's pause is pending again, for the new connection. Returns whether the transfer
    /// is suspended: then it must stay out of curl until resumed, as a pause before any connection does.
    mutating func startsAgainOnFreshConnection() -> Bool {
        if case .paused(let stage) = state { state = .pausePending(stage) }
        return isPausePending
    }

    /// Whether a user's pause waits for a connection to apply to.
    var isPausePending: Bool {
        guard case .pausePending = state else { return false }
        return true
    }

    /// Why a callback stopped the transfer, if one did.
    var abortError: TransferError? {
        guard case .aborted(let error, _) = state else { return nil }
        return error
    }

    /// Whether the transfer's end has been reported.
    var isFinished: Bool {
        guard case .finished = state else { return false }
        return true
    }

    private var stage: ResponseStage? {
        switch state {
        case .running(let stage), .pausePending(let stage), .paused(let stage), .waitingForConsumer(let stage): stage
        default: nil
        }
    }
}
