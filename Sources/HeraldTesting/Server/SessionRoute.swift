import Foundation
import Herald
import HeraldNotifications
import NIOCore
import NIOHTTP1

/// The endpoints for session-level features: retries (`/flaky`) and cookies (`/login`, `/account`).
///
/// - `/flaky?key=K&fail=N&status=S&retry-after=V&www-authenticate=W`: the first `N` requests (0...100, default 1)
///   carrying key `K` (default empty) get status `S` (400...599, default 503) with `Retry-After: V` and
///   `WWW-Authenticate: W` when given; every later one gets `200` with `{"attempt":n,"key":K}`, `n` counting from 1.
///   Counted per server. With `early=1` the answer is written when the request's head arrives, while its body is
///   still coming (read and counted all the same), as a server that refuses an upload at once does.
/// - `/login?value=V&redirect=URL&cookie=C`: `302` to `URL` (default `/account`) with
///   `Set-Cookie: session=V; Path=/; HttpOnly` (`V` default `s3cr3t`), plus each `cookie=C` as one more
///   `Set-Cookie` field as given.
/// - `/account`: `200` with `{"cookie":"…"}` (the request's `Cookie` field) when it carries a `session` cookie,
///   otherwise `403` with `{"cookie":""}`; with `?login=1`, a request without one is sent to log in instead:
///   `302` to `/login?redirect=/account%3Flogin%3D1`, which sets the cookie and sends it back here.
enum SessionRoute: Sendable, Equatable {
    case flaky(
        key: String, failures: Int, status: Int, retryAfter: String?, authenticate: String? = nil,
        answersBeforeBody: Bool = false)
    case login(value: String, redirect: String, cookies: [String])
    case account(sendsToLogin: Bool)

    /// The route for `segments`, or `nil` when the path is not one of these.
    static func parse(segments: [String], query: RouteQuery) throws -> SessionRoute? {
        switch segments {
        case ["flaky"]:
            return .flaky(
                key: query.value("key") ?? "", failures: try query.integer("fail", default: 1, in: 0...100),
                status: try query.integer("status", default: 503, in: 400...599),
                retryAfter: query.value("retry-after"),
                authenticate: query.value("www-authenticate").flatMap { $0.contains(where: \.isNewline) ? nil : $0 },
                answersBeforeBody: query.flag("early"))
        case ["login"]:
            return .login(
                value: query.value("value") ?? "s3cr3t", redirect: query.value("redirect") ?? "/account",
                cookies: query.items.filter { $0.name == "cookie" }.compactMap(\.value))
        case ["account"]:
            return .account(sendsToLogin: query.value("login") == "1")
        default:
            return nil
        }
    }

    /// The response to `request`, counting `/flaky` requests in `counters`.
    func response(for request: ReceivedRequest, counters: RequestCounters) -> CannedResponse {
        switch self {
        case .flaky(let key, let failures, let status, let retryAfter, let authenticate, _):
            let attempt = counters.next(for: key)
            guard attempt > failures else {
                var headers = NIOHTTP1.HTTPHeaders()
                if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
                if let authenticate { headers.add(name: "WWW-Authenticate", value: authenticate) }
                return .status(HTTPResponseStatus(statusCode: status), headers: headers)
            }
            struct Answer: Encodable {
                var attempt: Int
                var key: String
            }
            return .json(Answer(attempt: attempt, key: key))
        case .login(let value, let redirect, let cookies):
            var headers: NIOHTTP1.HTTPHeaders = [
                "Location": redirect, "Set-Cookie": "session=\(value); Path=/; HttpOnly",
            ]
            for cookie in cookies where !cookie.contains(where: { $0 == "\r" || $0 == "\n" }) {
                headers.add(name: "Set-Cookie", value: cookie)
            }
            return .status(.found, headers: headers)
        case .account(let sendsToLogin):
            let cookie = request.head.headers["cookie"].joined(separator: "; ")
            let hasSession = cookie.split(separator: ";").contains {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("session=")
            }
            if sendsToLogin, !hasSession {
                return .status(.found, headers: ["Location": "/login?redirect=/account%3Flogin%3D1"])
            }
            var response = CannedResponse.json(["cookie": cookie])
            if !hasSession { response.status = .forbidden }
            return response
        }
    }
}

/// Per-key request counts for `/flaky`, shared by every connection of one server.
final class RequestCounters: Sendable {
    private let counts = Locked<[String: Int]>([:])

    init() {}

    /// Counts one more request for `key` and returns its number, from 1.
    func next(for key: String) -> Int {
        counts.withLock { counts in
            counts[key, default: 0] += 1
            return counts[key, default: 0]
        }
    }
}
