import Foundation

/// What the server does for one request, decided from its request target alone.
///
/// Parsing is pure so it can be tested without sockets; a malformed parameter becomes ``badRequest(_:)`` rather
/// than a trap, because the client controls the request target.
enum Route: Sendable {
    case status(code: Int, location: String?, authenticate: String? = nil)
    /// `/json`; with a gate, the first request waits there (``TestServer/openGate(_:)``).
    case json(gate: String?)
    case invalidJSON
    case text
    case empty
    case html
    case gzip
    case echo
    case multipart
    case bytes(ByteStreamOptions)
    /// Server-sent events: see ``EventStreamResponder``.
    case events(EventStreamOptions)
    case delay(milliseconds: Int)
    case barrier(count: Int, key: String)
    case redirect(remaining: Int, status: Int)
    case redirectTo(location: String, status: Int)
    /// `/headers`; `notModifiedWhenConditional` for `/headers/not-modified`.
    case headers([(name: String, value: String)], notModifiedWhenConditional: Bool = false)
    case basicAuth(
        user: String, password: String, redirect: String?, alsoOffer: String? = nil, sendsToLogin: Bool = false)
    case digestAuth(user: String, password: String, cookie: String?)
    case fault(Fault)
    /// Retries and cookies: see ``SessionRoute``.
    case session(SessionRoute)
    case notFound
    case badRequest(String)

    /// Whether the answer is written when the request's head arrives, while its body is still coming
    /// (`/bytes/N?early=1`, `/flaky?early=1`, `/fault/early-close`).
    var answersBeforeBody: Bool {
        switch self {
        case .bytes(let options): options.answersBeforeBody
        case .session(.flaky(_, _, _, _, _, let early)): early
        case .fault(.earlyClose): true
        default: false
        }
    }

    /// The faults the server can inject; see ``TestServer`` for their wire behaviour.
    enum Fault: Sendable, Equatable {
        case resetBeforeHeaders
        case resetMidBody(bytes: Int, declared: Int)
        case stall
        case truncated(declared: Int, sent: Int, gzip: Bool = false)
        case badChunked
        case garbageStatus(line: String)
        case hugeHeader(bytes: Int, lines: Int)
        case redirectLoop
        case rawHeaders
        case forgedStatusLines
        case twoLengths(first: Int, second: Int)
        case trailers(bytes: Int, emptyBody: Bool = false)
        case earlyClose(status: Int, bodyDelay: Int)
        case resetWhenReused(firstDelayMilliseconds: Int, resetAfterMilliseconds: Int, closesCleanly: Bool = false)
    }

    /// The largest head `/fault/huge-header` writes.
    static let maximumHugeHeaderSize = 16 << 20

    /// The largest body a fault will write, to keep fault responses cheap.
    static let maximumFaultBodySize = 64 << 20

    /// Parses a request target such as `"/bytes/10?chunked=1"`.
    ///
    /// - Returns: The path without its query, and the route to serve.
    static func parse(uri: String) -> (path: String, route: Route) {
        guard let components = URLComponents(string: uri), components.path.hasPrefix("/") else {
            return (uri, .badRequest("malformed request target"))
        }
        let query = RouteQuery(components.queryItems ?? [])
        do {
            return (components.path, try route(path: components.path, query: query))
        } catch let error as RouteQuery.InvalidParameter {
            return (components.path, .badRequest(error.message))
        } catch {
            return (components.path, .badRequest("\(error)"))
        }
    }

    private static func route(path: String, query: RouteQuery) throws -> Route {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch segments.first {
        case "status" where segments.count == 2:
            let code = try RouteQuery.integer(segments[1], named: "status code", in: 200...599)
            return .status(code: code, location: query.value("location"), authenticate: query.value("authenticate"))
        case "json" where segments.count == 1:
            return .json(gate: query.value("gate"))
        case "json" where segments == ["json", "invalid"]:
            return .invalidJSON
        case "text" where segments.count == 1:
            return .text
        case "empty" where segments.count == 1:
            return .empty
        case "html" where segments.count == 1:
            return .html
        case "echo" where segments.count == 1:
            return .echo
        case "gzip" where segments.count == 1:
            return .gzip
        case "multipart" where segments.count == 1:
            return .multipart
        case "bytes" where segments.count == 2:
            return .bytes(try ByteStreamOptions(count: segments[1], query: query))
        case "events" where segments.count == 2:
            return .events(try EventStreamOptions(count: segments[1], query: query))
        case "delay" where segments.count == 2:
            return .delay(milliseconds: try RouteQuery.integer(segments[1], named: "delay", in: 0...600_000))
        case "barrier" where segments.count == 2:
            let count = try RouteQuery.integer(segments[1], named: "barrier count", in: 1...1_000_000)
            return .barrier(count: count, key: query.value("key") ?? "")
        case "redirect" where segments.count == 2:
            let remaining = try RouteQuery.integer(segments[1], named: "redirect count", in: 0...100)
            let status = try query.integer("status", default: 302, in: 301...308)
            guard [301, 302, 303, 307, 308].contains(status) else {
                throw RouteQuery.InvalidParameter(message: "status must be 301, 302, 303, 307 or 308")
            }
            return .redirect(remaining: remaining, status: status)
        case "redirect-to" where segments.count == 1:
            guard let location = query.value("url"), !location.isEmpty else {
                throw RouteQuery.InvalidParameter(message: "missing url parameter")
            }
            return .redirectTo(location: location, status: try query.integer("status", default: 302, in: 300...399))
        case "headers" where segments.count == 1:
            return .headers(query.items.map { (name: $0.name, value: $0.value ?? "") })
        case "headers" where segments == ["headers", "not-modified"]:
            return .headers(
                query.items.map { (name: $0.name, value: $0.value ?? "") }, notModifiedWhenConditional: true)
        case "auth" where segments == ["auth", "basic"]:
            guard let user = query.value("user"), let password = query.value("password") else {
                throw RouteQuery.InvalidParameter(message: "missing user or password parameter")
            }
            return .basicAuth(
                user: user, password: password, redirect: query.value("redirect"),
                alsoOffer: query.value("alsoOffer").flatMap { $0.contains(where: \.isNewline) ? nil : $0 },
                sendsToLogin: query.flag("login"))
        case "auth" where segments == ["auth", "digest"]:
            guard let user = query.value("user"), let password = query.value("password") else {
                throw RouteQuery.InvalidParameter(message: "missing user or password parameter")
            }
            let cookie = query.value("cookie")
            if let cookie, cookie.isEmpty || cookie.contains(where: { ";=, \t\r\n".contains($0) }) {
                throw RouteQuery.InvalidParameter(message: "the cookie parameter is not a cookie name")
            }
            return .digestAuth(user: user, password: password, cookie: cookie)
        case "fault" where segments.count == 2:
            return try fault(named: segments[1], query: query).map(Route.fault) ?? .notFound
        default:
            return try SessionRoute.parse(segments: segments, query: query).map(Route.session) ?? .notFound
        }
    }

    private static func fault(named name: String, query: RouteQuery) throws -> Fault? {
        let limit = 0...maximumFaultBodySize
        switch name {
        case "reset-before-headers":
            return .resetBeforeHeaders
        case "reset-when-reused":
            return .resetWhenReused(
                firstDelayMilliseconds: try query.integer("firstDelayMs", default: 0, in: 0...60_000),
                resetAfterMilliseconds: try query.integer("resetAfterMs", default: 0, in: 0...60_000),
                closesCleanly: query.flag("close"))
        case "reset-mid-body":
            let bytes = try query.integer("bytes", default: 1024, in: limit)
            let declared = try query.integer("declared", default: bytes + 1024, in: (bytes + 1)...Int.max)
            return .resetMidBody(bytes: bytes, declared: declared)
        case "stall":
            return .stall
        case "truncated":
            let declared = try query.integer("declared", default: 100, in: 1...Int.max)
            let sent = try query.integer("sent", default: declared / 2, in: limit)
            guard sent < declared else {
                throw RouteQuery.InvalidParameter(message: "sent must be smaller than declared")
            }
            let gzip = query.flag("gzip")
            guard !gzip || declared <= BytePattern.maximumGzipCount else {
                throw RouteQuery.InvalidParameter(
                    message: "declared must be at most \(BytePattern.maximumGzipCount) with gzip")
            }
            return .truncated(declared: declared, sent: sent, gzip: gzip)
        case "bad-chunked":
            return .badChunked
        case "garbage-status":
            let line = query.value("line") ?? "HELLO"
            guard !line.contains("\r"), !line.contains("\n") else {
                throw RouteQuery.InvalidParameter(message: "line must be one line")
            }
            return .garbageStatus(line: line)
        case "huge-header":
            let bytes = try query.integer("bytes", default: 1 << 20, in: 1...maximumHugeHeaderSize)
            let lines = try query.integer("lines", default: 1, in: 1...min(bytes, 10_000))
            return .hugeHeader(bytes: bytes, lines: lines)
        case "redirect-loop":
            return .redirectLoop
        case "raw-headers":
            return .rawHeaders
        case "forged-status-lines":
            return .forgedStatusLines
        case "two-lengths":
            return .twoLengths(
                first: try query.integer("first", default: 100, in: 0...Int.max),
                second: try query.integer("second", default: 2, in: 0...Int.max))
        case "early-close":
            return .earlyClose(
                status: try query.integer("status", default: 413, in: 300...599),
                bodyDelay: try query.integer("bodyDelayMs", default: 100, in: 0...60000))
        case "trailers":
            return .trailers(
                bytes: try query.integer("bytes", default: 100, in: 1...maximumHugeHeaderSize),
                emptyBody: query.flag("empty"))
        default:
            return nil
        }
    }
}
