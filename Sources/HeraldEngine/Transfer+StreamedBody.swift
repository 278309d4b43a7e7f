import CCurl

// A streamed request body's reader works off the loop thread (`StreamBodyReader`); these are the transfer's
// side of it, on the loop thread: starting it, rewinding, and continuing once it has something to send.
extension Transfer {
    /// Starts a streamed body's reader as the transfer joins `multi`; its wake sends `bodyAvailable` through
    /// the engine's command queue. Data and file bodies have no reader. Loop thread only.
    func startBodyReader(in multi: MultiHandle) {
        guard let source else { return }
        let wake: @Sendable () -> Void = { [weak self, weak multi] in
            guard let self, let multi else { return }
            multi.engine.execute(.bodyAvailable(self), on: multi)
        }
        // Only a stream's read callback pauses for want of bytes (a data or file body's never does).
        if source is StreamedBodySource { bodyWake = wake }
        source.startReading(wake: wake)
    }

    /// Rewinds the request body to `offset` without waiting (a stream's reader gets a fresh stream on its
    /// own queue meanwhile); returns why it can't. Loop thread only.
    func rewindSource(to offset: Int64) -> TransferError? {
        guard let source else { return TransferError(.bodyStream, "The request has no body to send again.") }
        if let error = source.rewind(to: offset) { return error }
        bodyBytesSent = offset
        // A rewound stream has nothing until its reader reads the fresh one; whatever curl's pause state
        // across the resend, the reader's wake then continues sending.
        isWaitingForBody = true
        return nil
    }

    /// libcurl stopped watching the transfer's socket (`CURL_POLL_REMOVE`). With the final answer's head in and
    /// sending paused for want of a streamed body's bytes, that is libcurl done reading an answer on a connection
    /// it closes: it stopped sending too, but the pause it keeps would never let the transfer end. Continued once
    /// per answer: a transfer that still sends pauses again at its next read, and is then unwatched again until
    /// the reader's wake. Loop thread, inside curl's socket callback: the continuing is a command.
    func socketNoLongerWatched() {
        guard finalHeadEnded, isWaitingForBody, !continuedOnceUnwatched, let bodyWake else { return }
        continuedOnceUnwatched = true
        bodyWake()
    }

    /// A streamed body's reader has something for a read callback that paused sending for want of it:
    /// continue sending — but leave a pause of the user's (their resume continues everything) and a paused
    /// receive direction (a streamed response's consumer, the task's answer) as they are. Loop thread only,
    /// outside curl callbacks; unpausing may run the read and write callbacks before it returns.
    func bodyDidBecomeAvailable() {
        guard isWaitingForBody, let easyHandle else { return }
        let action: Int32
        switch machine.bodyResumeAction {
        case .none:
            return
        case .continueAll:
            action = CURLPAUSE_CONT
        case .continueSendingOnly:
            // curl_easy_pause sets both directions at once: keep receiving paused, unpause sending.
            action = CURLPAUSE_RECV
        }
        isWaitingForBody = false
        lastActivity = ActivityClock.now
        // Fails only without a connection (a transfer being sent again on a fresh one): its read callback
        // then runs afresh anyway.
        curl_easy_pause(easyHandle, action)
    }
}
