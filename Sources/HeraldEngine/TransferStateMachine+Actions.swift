// What a ``TransferStateMachine`` transition tells its ``Transfer`` to do; the transfer does it after the
// state has changed, so that a callback curl runs meanwhile (unpausing re-enters the write callback) sees the
// new state.
extension TransferStateMachine {
    /// What to do about a user's pause, or about a pending one at a progress tick.
    enum PauseAction: Equatable {
        case none
        /// Call `curl_easy_pause(CURLPAUSE_ALL)`, then report whether curl took it with
        /// ``didTryPause(accepted:)``.
        case pauseCurl
    }

    /// What to do when the user resumes or the task allows the response.
    enum ContinueAction: Equatable {
        case none
        /// Call `curl_easy_pause(CURLPAUSE_CONT)`; curl hands back what it kept, synchronously.
        case continueCurl
        /// Report the held successful result (the sink has not begun).
        case finishHeldResult
    }

    /// What a write or read callback returns.
    enum CallbackAction: Equatable {
        /// Move the bytes.
        case proceed
        /// Return the callback's pause code: curl keeps the chunk and hands it back on unpause.
        case pause
        /// Return the callback's abort code: the transfer is being stopped.
        case abort
    }

    /// What a streamed request body's new bytes continue (``bodyResumeAction``).
    enum BodyResumeAction: Equatable {
        case none
        /// `curl_easy_pause(CURLPAUSE_CONT)`: nothing else holds the transfer.
        case continueAll
        /// `curl_easy_pause(CURLPAUSE_RECV)`: unpause sending, keep receiving paused.
        case continueSendingOnly
    }

    /// What the progress callback does.
    enum ProgressAction: Equatable {
        /// Go on.
        case proceed
        /// A pause is pending: try `curl_easy_pause(CURLPAUSE_ALL)`, then ``didTryPause(accepted:)``.
        case tryPause
        /// Return non-zero: the transfer is being stopped.
        case abort
    }

    /// What the write callback does with a response that needs the task's answer.
    enum DispositionAction: Equatable {
        /// Ask the delegate, and pause the write callback.
        case askDelegate
        /// Already asked: keep the write callback paused.
        case keepWaiting
        /// Already allowed: receive the body.
        case proceed
    }

    /// What to do when curl reports the transfer's end. Not `Equatable`: ``TransferError`` is not.
    enum CurlFinishAction {
        case none
        /// Hold the result and ask the delegate for its answer to the response.
        case holdAndAskDelegate
        /// Hold the result; the delegate was already asked.
        case hold
        /// Finish with the error that made a callback stop curl, whatever curl's result.
        case fail(TransferError)
        /// Finish with curl's result.
        case finish(sinkDidBegin: Bool)
    }

    /// What to do when the transfer ends for a reason of ours (cancelled, invalid, …).
    enum FinishAction: Equatable {
        /// Already finished: report nothing.
        case none
        /// Report, once.
        case finish(sinkDidBegin: Bool)
    }
}
