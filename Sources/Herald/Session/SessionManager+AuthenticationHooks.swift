import Foundation

// The hooks that answer HTTP authentication challenges (Basic and Digest).
extension SessionManager {
    /// AF's `taskDidReceiveAuthenticationChallenge`: answers a task's `401 Unauthorized` with a Basic or
    /// Digest challenge. Takes precedence over ``sessionDidReceiveAuthenticationChallenge``.
    ///
    /// Called on the task's hook queue — never the engine's loop thread, never ``completionQueue`` —
    /// once per challenge, after the 401's body has arrived; the task stays running meanwhile. Return
    /// ``AuthenticationDisposition/useCredential(_:)`` to send the request again with that credential
    /// (libcurl computes the Basic or Digest header; bodies are resent as for a 307, streams through
    /// ``taskNeedNewBodyStream``). A refused credential asks again with
    /// ``AuthenticationChallenge/previousFailureCount`` one higher; after 8 refusals the 401 is the attempt's
    /// result. ``AuthenticationDisposition/rejectProtectionSpace``, or default handling without a stored
    /// credential, makes the 401 response the attempt's result too: the retrier is asked about it, as about a
    /// 401 no hook saw, and unless it retries the task completes with it (no error from Herald; the serializer
    /// judges the status). ``AuthenticationDisposition/cancelAuthenticationChallenge`` completes it with
    /// ``HeraldError/Code/cancelled``. A `cancel()` while the hook runs wins: the task completes once,
    /// cancelled. Default `nil`.
    public var taskDidReceiveAuthenticationChallenge: TaskAuthenticationChallengeHandler? {
        get { readHooks { $0.taskDidReceiveAuthenticationChallenge } }
        set { updateHooks { $0.taskDidReceiveAuthenticationChallenge = newValue } }
    }

    /// AF's `sessionDidReceiveAuthenticationChallenge`, for HTTP Basic and Digest: answers every task's
    /// challenge when ``taskDidReceiveAuthenticationChallenge`` is `nil`. Same queue, timing and meaning.
    /// Server trust (TLS) is not decided here but by ``SessionConfiguration/securityPolicy``. Default `nil`:
    /// ``credentialStore`` is consulted.
    public var sessionDidReceiveAuthenticationChallenge: SessionAuthenticationChallengeHandler? {
        get { readHooks { $0.sessionDidReceiveAuthenticationChallenge } }
        set { updateHooks { $0.sessionDidReceiveAuthenticationChallenge = newValue } }
    }
}
