import Foundation
import HeraldEngine

/// What following one redirect means: the rules Herald applies before a hop, and before
/// ``SessionManager/taskWillPerformHTTPRedirection`` sees the proposed request.
///
/// libcurl's own redirect following is off (`CURLOPT_FOLLOWLOCATION` = 0) so that every hop is visible
/// and can be vetoed; these are the rules curl and browsers apply, written out.
package enum RedirectRules {
    /// Leaves `transfer`'s credential fields and challenge credential behind, for a request to another origin
    /// than the one they were meant for.
    static func dropCredentials(from transfer: inout TransferRequest) {
        for name in originBoundHeaders { transfer.headers.remove(name: name) }
        transfer.credential = nil
    }

    /// The statuses Herald follows.
    static func isRedirect(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }

    /// The header fields that belong to the origin they were sent to, dropped when a hop changes scheme, host
    /// or port: those that carry credentials, and a `Host` the caller named (sent to another host, it would ask
    /// that server for a site it may not serve, and tell it the first one's name; libcurl's own redirects keep a
    /// custom `Host` for the first host only).
    static let originBoundHeaders = ["Authorization", "Cookie", "Proxy-Authorization", "Host"]

    /// The header fields that describe a body: dropped when a hop drops the body.
    static let bodyHeaders = ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"]

    /// Resolves `Location` against the URL that answered; `nil` when it is not a URL. A `Location` without a
    /// fragment keeps the one the answered URL had (RFC 9110 §10.2.2), as browsers do.
    static func target(of location: String, relativeTo base: URL) -> URL? {
        let trimmed = location.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, let url = URL(string: trimmed, relativeTo: base)?.absoluteURL else { return nil }
        guard url.fragment == nil,
            let fragment = URLComponents(url: base, resolvingAgainstBaseURL: true)?
                .percentEncodedFragment,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url }
        components.percentEncodedFragment = fragment
        return components.url ?? url
    }

    /// The method of the next hop: 303 turns everything but `HEAD` into `GET`; 301 and 302 turn `POST`
    /// into `GET` (what every browser does); 307 and 308 keep the method and the body.
    static func method(after status: Int, method: String) -> String {
        switch status {
        case 303 where method != "HEAD": "GET"
        case 301 where method == "POST", 302 where method == "POST": "GET"
        default: method
        }
    }

    /// Whether two URLs are the same origin: scheme, host and port (default ports filled in), scheme and host
    /// compared without case. The one implementation in the package: the observers tell a redirect to another
    /// server with it too.
    package static func isSameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && a.effectivePort == b.effectivePort
    }

    /// The schemes a redirect may lead to, whatever else a session's requests may use: what browsers follow,
    /// and what libcurl's own redirect following allows by default. A session that allows another scheme for
    /// its own requests (`ftp`) must not speak it because a server named it.
    static let followedSchemes: Set<String> = ["http", "https"]

    /// Why a hop to `target` from `current` is refused, or `nil` when it may be followed.
    static func refusal(
        from current: URL, to target: URL, allowedProtocols: Set<String>, allowsInsecureRedirects: Bool
    ) -> HeraldError? {
        let scheme = target.scheme?.lowercased() ?? ""
        guard followedSchemes.contains(scheme) else {
            return HeraldError(
                .unsupportedURL, "A redirect to the URL scheme '\(scheme)' is never followed: only http and https are.",
                url: target)
        }
        guard allowedProtocols.contains(scheme) else {
            return HeraldError(
                .unsupportedURL, "A redirect to the URL scheme '\(scheme)' is not allowed by this session.", url: target
            )
        }
        guard target.host?.isEmpty == false else {
            return HeraldError(.badURL, "The redirect target has no host.", url: target)
        }
        if current.scheme?.lowercased() == "https", scheme == "http", !allowsInsecureRedirects {
            return HeraldError(
                .unsupportedURL,
                "A redirect from https to http is refused; set SessionConfiguration.allowsInsecureRedirects to allow it.",
                url: target)
        }
        return nil
    }
}

/// The type of ``SessionManager/taskWillPerformHTTPRedirection``: the task, the 3xx response and the
/// proposed request in; the request to send, or `nil` to complete with the 3xx.
public typealias RedirectionHook =
    @Sendable (_ task: SessionTask, _ response: HTTPResponse, _ proposedRequest: Request) -> Request?
