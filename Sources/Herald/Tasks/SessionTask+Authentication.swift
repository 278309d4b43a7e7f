import Foundation
import HeraldEngine

// Answering HTTP authentication challenges. A 401 with a Basic or Digest `WWW-Authenticate` ends its
// transfer like any response; `beginNextHop(after:)` then asks here, on the hook queue: the session's
// task hook, else its session hook, else the credential store. With a credential the request is sent
// again as a new transfer that lets libcurl compute the header; without one the task completes with the
// 401 — promptly, never waiting (corelibs' URLSession hangs there, #5456).
extension SessionTask {
    /// After this many refused credentials the 401 is the task's result, whatever the hooks answer: a hook that
    /// keeps returning the same wrong password must not keep the task busy forever.
    static let maximumAuthenticationAttempts = 8

    /// Whether a 401 carries a challenge Herald can answer (Basic or Digest). After the transfer ended. Any other
    /// (`Bearer`, which RFC 6750 puts on every 401 of a token) is the retrier's to answer, as a 401 without a
    /// challenge is: refreshing a token is an interceptor's work.
    func wantsAuthenticationHop(for response: HTTPResponse) -> Bool {
        response.headers.contains("WWW-Authenticate")
            && AuthenticationChallenge.parse(response, url: response.url) != nil
    }

    /// Asks the hooks or the store about the challenge and starts the next hop, or completes. Hook queue.
    func answerChallenge(_ outcome: TaskOutcome, response: HTTPResponse, from current: TransferRequest) {
        let offered = AuthenticationChallenge.offeredSpaces(response, url: current.url)
        guard let preferred = offered.first else {
            return completeWithHopResponse(outcome, from: current)
        }
        let failures = machine { $0.hops.authenticationFailures }
        guard failures < Self.maximumAuthenticationAttempts else {
            return completeWithHopResponse(outcome, from: current)
        }
        // The first space offered that the store has a credential for (a server offering Digest and Basic, the
        // user's credential stored for Basic), else the one Herald prefers.
        let store = session.credentialStore
        let (space, stored) =
            offered.lazy.compactMap { space in store.credential(for: space).map { (space, $0) } }.first
            ?? (preferred, nil)
        let challenge = AuthenticationChallenge(
            protectionSpace: space, previousFailureCount: failures, failureResponse: response,
            proposedCredential: stored)
        let disposition: AuthenticationDisposition
        if let hook = session.taskDidReceiveAuthenticationChallenge {
            disposition = hook(lifecycleSubject, challenge)
        } else if let hook = session.sessionDidReceiveAuthenticationChallenge {
            disposition = hook(session, challenge)
        } else {
            disposition = .performDefaultHandling
        }
        // Completed while the hook decided: its answer is ignored.
        guard !hasCompleted else { return }
        let credential: Credential
        switch disposition {
        case .useCredential(let chosen):
            credential = chosen
        case .performDefaultHandling:
            // The store's credential, unless this attempt already sent it to this origin and a 401 refused it.
            let refused = stored.map { SentCredential(user: $0.user, password: $0.password, url: current.url) }
            guard let stored, let refused, !machine({ $0.hops.refusedCredentials.contains(refused) }) else {
                return completeWithHopResponse(outcome, from: current)
            }
            credential = stored
        case .rejectProtectionSpace:
            return completeWithHopResponse(outcome, from: current)
        case .cancelAuthenticationChallenge:
            return finishHop(outcome, error: Self.cancellation(for: originalRequest.url))
        }
        guard !credential.hasControlCharacter else {
            return finishHop(
                outcome,
                error: HeraldError(
                    .invalidRequest,
                    "The credential answering the server's challenge contains a control character (CR, LF, NUL…), "
                        + "which would change the request's header fields.", url: current.url))
        }
        var next = current
        next.credential = TransferCredential(credential, scheme: space.authenticationScheme)
        // A header of the caller's would win over curl's own, and it is what the server just refused.
        next.headers.remove(name: "Authorization")
        if let failure = rewindBody(of: &next) {
            return finishHop(outcome, error: failure)
        }
        startTransfer(next)
    }
}
