import Dispatch
import Foundation
import HeraldEngine

// Following redirects by hand. libcurl's FOLLOWLOCATION is off, so a 3xx ends its transfer like any
// response; `proceed(after:)` asks `beginNextHop(after:)` first, which may start a new transfer for
// the same task instead of completing it.
//
// Threading: the decision and the session's redirection hook run on the hook queue — never on the loop
// thread, where a slow hook would stall every transfer of the engine — and the next transfer is then
// handed to the engine like the first one (`TaskStateMachine.transferPrepared(_:credential:)`). The task stays
// `running` (or `suspended`) in between: a `cancel()` arriving then completes the task at once with
// `cancelled`; a `suspend()` holds the next transfer until `resume()`.
extension SessionTask {
    /// Whether `outcome` leads to another transfer for this task (a redirect to follow, an authentication
    /// challenge to answer, a `304` confirming another representation than a stale cache entry's); if so the
    /// task does not complete now. On the loop thread, after the transfer ended: the decision and the hooks it
    /// asks run on ``hookQueue``.
    func beginNextHop(after outcome: TaskOutcome) -> Bool {
        guard outcome.error == nil, let response = outcome.response else { return false }
        let answer = nextHop(after: response)
        let isRedirect = answer == .redirect
        // A 401 the engine kept from the data-task hooks, taking its Basic or Digest challenge for one the task
        // answers, that the task can't answer after all (a Digest challenge libcurl can't compute): it goes the
        // way of a declined challenge, which shows the hooks the response and its body as any final one.
        let isUnanswerableChallenge =
            answer == nil && response.statusCode == 401
            && machine({ $0.currentTransfer })?.request.leadsToNextHop(
                status: 401, headers: response.headers.engineFields) == true
        let isChallenge = answer == .challenge || isUnanswerableChallenge
        let isRefutedRevalidation = response.statusCode == 304 && machine { $0.refutesRevalidation(response) }
        guard isRedirect || isChallenge || isRefutedRevalidation else { return false }
        guard let ended = machine({ $0.currentTransfer }) else { return false }
        let sent = ended.request
        // The cookies it carried: its own field, else the session's (the engine sends one or the other).
        let key = TaskHops.key(
            method: sent.method, url: sent.url, cookies: sent.headers["Cookie"] ?? sent.cookieHeader,
            credentialUser: sent.credential?.user)
        let hop = transition {
            $0.hopEnds(sent: key, response: response, metrics: outcome.metrics, isChallenge: isChallenge)
        }
        guard case .decide(let transfer) = hop else { return false }
        armResourceDeadline()
        let current = transfer.request
        hookQueue.async { [self] in
            // Completed while this waited its turn (a cancel, the resource timeout): no hook is asked.
            guard !hasCompleted else { return }
            if isRedirect {
                followRedirect(outcome, response: response, from: current)
            } else if isChallenge {
                answerChallenge(outcome, response: response, from: current)
            } else {
                askWithoutValidators(outcome, from: current)
            }
        }
        return true
    }

    /// The hop `response` leads this session to on its own, if any.
    enum NextHop {
        /// A redirect the session follows.
        case redirect
        /// An authentication challenge the task may answer.
        case challenge
    }

    /// The hop `response` leads this session to: a redirect it follows, a challenge the task may answer (a hook
    /// or a stored credential can), or none.
    func nextHop(after response: HTTPResponse) -> NextHop? {
        if RedirectRules.isRedirect(response.statusCode), session.configuration.followsRedirects,
            TransferRequest.hasLocation(response.headers["Location"])
        {
            return .redirect
        }
        guard response.statusCode == 401, wantsAuthenticationHop(for: response), let host = response.url.host,
            let port = response.url.effectivePort, mayAnswerChallenge(forHost: host, port: port)
        else { return nil }
        return .challenge
    }

    /// A `304` confirmed another representation than the stale cache entry's (its `ETag` differs): the entry
    /// can't answer, so the request is sent again without its validators, and the server's full answer is the
    /// task's (and replaces the entry when it can be stored). Hook queue.
    private func askWithoutValidators(_ outcome: TaskOutcome, from current: TransferRequest) {
        transition { $0.revalidationAbandoned() }
        var next = current
        for name in ResponseCachePolicy.conditionalFields { next.headers.remove(name: name) }
        next.revalidatesCachedResponse = false
        if let failure = rewindBody(of: &next) {
            return finishHop(outcome, error: failure)
        }
        startTransfer(next)
    }

    /// Decides the redirect and starts the next hop, or completes the task. Hook queue.
    private func followRedirect(_ outcome: TaskOutcome, response: HTTPResponse, from current: TransferRequest) {
        let configuration = session.configuration
        if let cache = configuration.responseCache {
            // An unsafe method's redirect is its non-error answer (a POST's 303): what it changed is stale now,
            // whatever the hops after it answer.
            let answered = Request(url: current.url, method: current.method)
            for url in ResponseCachePolicy.invalidatedURLs(for: answered, response: response) {
                cache.removeCachedResponse(for: Request(url: url))
            }
        }
        let redirectCount = machine { $0.hops.redirectCount }
        guard redirectCount < configuration.maximumRedirects else {
            return finishHop(
                outcome,
                error: HeraldError(
                    .tooManyRedirects, "More than \(configuration.maximumRedirects) redirects.", url: current.url))
        }
        guard let location = response.headers["Location"],
            let target = RedirectRules.target(of: location, relativeTo: current.url)
        else {
            return finishHop(
                outcome,
                error: HeraldError(.badServerResponse, "The redirect's Location is not a URL.", url: current.url))
        }
        if let refusal = RedirectRules.refusal(
            from: current.url, to: target, allowedProtocols: configuration.allowedProtocols,
            allowsInsecureRedirects: configuration.allowsInsecureRedirects)
        {
            return finishHop(outcome, error: refusal)
        }
        var next = current
        next.url = target
        next.method = RedirectRules.method(after: response.statusCode, method: current.method)
        // The method kept, so is the body; but a `GET`'s only where the status promises the same request again
        // (`307`, `308`): a `301`, `302` or `303` leads a `GET` to another resource, which its query isn't for.
        let repeatsRequest = response.statusCode == 307 || response.statusCode == 308
        let keepsBody =
            next.method == current.method && next.method != "HEAD" && (next.method != "GET" || repeatsRequest)
        if !keepsBody {
            next.body = nil
            for name in RedirectRules.bodyHeaders { next.headers.remove(name: name) }
        }
        if !RedirectRules.isSameOrigin(current.url, target) { RedirectRules.dropCredentials(from: &next) }
        if next.revalidatesCachedResponse {
            // The stored response's validators are the redirecting URL's: asked of the target, a `304` would
            // confirm the wrong body.
            for name in ResponseCachePolicy.conditionalFields { next.headers.remove(name: name) }
            next.revalidatesCachedResponse = false
        }
        // The body the hop would send, when it is in memory: the adapter's for this attempt, an upload's own; not
        // one an earlier hop dropped. A file's or a stream's is not shown.
        var shownBody: Data?
        if case .data(let data) = next.body { shownBody = data }
        var proposed = Request(
            url: next.url, method: next.method, headers: HTTPHeaders(next.headers), body: shownBody,
            timeoutInterval: originalRequest.timeoutInterval)
        if let hook = session.taskWillPerformHTTPRedirection {
            let answer = hook(lifecycleSubject, response, proposed)
            // Completed while the hook decided: its answer is ignored.
            guard !hasCompleted else { return }
            guard let chosen = answer else {
                // AF's nil: the 3xx itself is the task's result.
                return completeWithHopResponse(outcome, from: current)
            }
            do throws(HeraldError) {
                try chosen.validate(allowedProtocols: configuration.allowedProtocols)
            } catch {
                return finishHop(outcome, error: error)
            }
            if chosen.url != target {
                // The hook sends the request elsewhere: the session's rules hold for where it goes, and a
                // credential answering a challenge stays with its origin (the hook sees no such credential to
                // remove itself).
                if let refusal = RedirectRules.refusal(
                    from: current.url, to: chosen.url, allowedProtocols: configuration.allowedProtocols,
                    allowsInsecureRedirects: configuration.allowsInsecureRedirects)
                {
                    return finishHop(outcome, error: refusal)
                }
                if !RedirectRules.isSameOrigin(current.url, chosen.url) { next.credential = nil }
            }
            // A file's or a stream's body is not in the request the hook is shown: a hook that turns the hop into a
            // `GET` (or any other method) without giving a body of its own drops the one the task was sending.
            let dropsBody =
                next.body != nil && chosen.body == nil
                && (chosen.method != next.method || ["GET", "HEAD"].contains(chosen.method))
            if chosen.body != proposed.body {
                next.body = chosen.body.map { .data($0) }
            } else if dropsBody {
                next.body = nil
            }
            next.url = chosen.url
            next.method = chosen.method
            next.headers = chosen.headers.engineFields
            // The body's framing is the engine's, as for every request (`SessionManager.requestHeaders`): a hook
            // that starts from the task's own request would carry its `Content-Length` to a hop without its body.
            for name in SessionManager.framingHeaders where next.headers.contains(name) {
                next.headers.remove(name: name)
            }
            if chosen.timeoutInterval != proposed.timeoutInterval {
                next.requestTimeout = chosen.timeoutInterval ?? configuration.timeoutIntervalForRequest
            }
            if dropsBody {
                for name in RedirectRules.bodyHeaders { next.headers.remove(name: name) }
            }
            if !RedirectRules.isSameOrigin(current.url, chosen.url) {
                // A hook that moved the request to another origin leaves there the credential fields it was shown,
                // as they are: they stay behind, as on any redirect across origins, whatever else it changed. A
                // field the hook set or changed it chose for that origin.
                for name in RedirectRules.originBoundHeaders
                where chosen.headers.values(for: name) == proposed.headers.values(for: name) {
                    next.headers.remove(name: name)
                }
            }
            proposed = chosen
        }
        // Whether a 401 from the target is answered depends on the target's origin, not the first request's.
        updateAnswersChallenges(of: &next)
        // With the cookies it will carry (its own field, else the session's, among them those just stored).
        let key = TaskHops.key(
            method: next.method, url: next.url,
            cookies: next.headers["Cookie"] ?? session.cookieHeader(for: next.url),
            credentialUser: next.credential?.user)
        if case .loop = transition({ $0.redirectFollowed(to: key) }) {
            return finishHop(
                outcome,
                error: HeraldError(
                    .redirectLoop,
                    "The redirect leads back to \(next.method) "
                        + "\(next.url.redactingSignatures().absoluteString), already requested.",
                    url: next.url))
        }
        if let failure = rewindBody(of: &next) {
            return finishHop(outcome, error: failure)
        }
        startTransfer(next)
    }
}
