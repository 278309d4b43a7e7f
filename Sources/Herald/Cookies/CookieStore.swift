import Dispatch
import Foundation
import HeraldCookies
import HeraldNotifications

/// The cookies of a session (RFC 6265): stored from every response's `Set-Cookie`, sent in a `Cookie`
/// field with every request they match — on every hop, redirects and authentication round-trips
/// included, since Herald runs each hop as a transfer of its own.
///
/// Each ``SessionManager`` has one (``SessionManager/cookieStore``), in memory unless the configuration
/// gives one (``SessionConfiguration/httpCookieStore``) — for example one that persists to a file:
///
/// - Domains: a cookie without `Domain` goes back to its host alone; with `Domain` (one leading dot
///   dropped), to that domain and its subdomains, provided the host is inside it, it is not a public suffix
///   and it is not broader than the host's registrable domain (see ``PublicSuffixList``): `Domain=co.uk`,
///   `Domain=com`, and `Domain=kobe.jp` from `city.kobe.jp`, are refused. Names compare in their ASCII
///   (punycode) form. IP addresses match only themselves.
/// - Paths: a cookie goes to its path and below it; without `Path`, the directory of the request's path.
/// - `Secure` cookies are sent only over `https`, and one set by an `http` response is refused.
/// - `Expires` is read with RFC 6265 §5.1.1's algorithm (tokens in any order, two-digit years, range
///   checks); a date it refuses leaves the attribute ignored. `Max-Age` wins over `Expires` and is capped at
///   400 days; an expired cookie removes the one of the same name, domain and path.
/// - The `Set-Cookie` fields of one response are applied in order, each as if it came alone.
/// - `HttpOnly` and `SameSite` are kept (and persisted) as received; `SameSite` is not enforced, as a
///   client has no top-level site.
/// - Limits: a name and value over 4096 bytes together are ignored; at most 50 cookies per domain (the
///   oldest go first) and 3000 in all.
///
/// ## The file format
///
/// A persistent store (``init(persistingTo:publicSuffixes:)``) keeps its **persistent** cookies (those with an expiry;
/// session cookies are never written) in a text file of JSON lines: one JSON object per cookie, with the
/// keys `name`, `value`, `domain`, `isHostOnly`, `path`, `expiresAt` and `creationDate` (seconds since
/// 1970, UTC), `isSecure`, `isHTTPOnly` and `sameSite` (`"Strict"`, `"Lax"`, `"None"`, or absent). The file
/// is rewritten (to a temporary file, then renamed over it) on a background queue after each change;
/// ``flush()`` waits for that.
///
/// Safe to use from any thread; its methods never call back into your code.
public final class CookieStore: Sendable {
    /// The most cookies kept for one domain.
    public static let maximumCookiesPerDomain = 50
    /// The most cookies kept in all.
    public static let maximumCookies = 3000

    private let cookies = Locked<[String: Cookie]>([:])
    private let fileURL: URL?
    private let saveQueue = DispatchQueue(label: "herald.cookie-store.save")
    private let publicSuffixes: PublicSuffixList

    /// Creates an empty in-memory store.
    /// - Parameter publicSuffixes: The suffixes refused as cookie domains; default ``PublicSuffixList/shared``.
    public init(publicSuffixes: PublicSuffixList = .shared) {
        self.fileURL = nil
        self.publicSuffixes = publicSuffixes
    }

    /// Creates a store that loads the persistent cookies of `fileURL` (in the format above) and saves them
    /// there after each change. A missing file is an empty store; it is created on the first save.
    /// Expired cookies in the file are dropped.
    /// - Parameters:
    ///   - fileURL: The file.
    ///   - publicSuffixes: The suffixes refused as cookie domains; default ``PublicSuffixList/shared``.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when the file exists but can't be read,
    ///   or a line of it is not a cookie (the message names the line).
    public init(persistingTo fileURL: URL, publicSuffixes: PublicSuffixList = .shared) throws(HeraldError) {
        self.fileURL = fileURL
        self.publicSuffixes = publicSuffixes
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return }
        let text: String
        do {
            text = try String(contentsOf: fileURL, encoding: .utf8)
        } catch {
            throw HeraldError(.fileIO, "Cannot read the cookie file \(fileURL.path).", underlying: error)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let now = Date()
        var loaded: [String: Cookie] = [:]
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            let cookie: Cookie
            do {
                cookie = try decoder.decode(Cookie.self, from: Data(line.utf8))
            } catch {
                throw HeraldError(
                    .fileIO, "Line \(index + 1) of the cookie file \(fileURL.path) is not a cookie.", underlying: error)
            }
            if !cookie.isExpired(at: now) { loaded[cookie.key] = cookie }
        }
        cookies.withLock { $0 = loaded }
    }

    /// Every cookie kept and not expired, by domain, path and name.
    public var allCookies: [Cookie] {
        let now = Date()
        return cookies.withLock { Array($0.values) }.filter { !$0.isExpired(at: now) }
            .sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
    }

    /// The cookies sent with a request to `url`, in the order of the `Cookie` field: longer paths first,
    /// then older cookies first (RFC 6265 §5.4).
    /// - Parameters:
    ///   - url: The request URL.
    ///   - date: The time of the request; default now.
    /// - Returns: The matching cookies.
    public func cookies(for url: URL, at date: Date = Date()) -> [Cookie] {
        cookies.withLock { Array($0.values) }.filter { $0.matches(url, at: date) }
            .sorted { lhs, rhs in
                lhs.path.count != rhs.path.count
                    ? lhs.path.count > rhs.path.count : lhs.creationDate < rhs.creationDate
            }
    }

    /// The longest `Cookie` field value ``cookieHeader(for:)`` makes, in bytes: libcurl's own limit.
    public static let maximumCookieHeaderLength = 8190
    /// The most cookies ``cookieHeader(for:)`` sends in one request: libcurl's own limit.
    public static let maximumCookiesPerRequest = 150

    /// The `Cookie` field value for a request to `url` (`a=1; b=2`), or `nil` when no cookie matches.
    ///
    /// The cookies go in the order of ``cookies(for:at:)``, at most ``maximumCookiesPerRequest`` of them and
    /// ``maximumCookieHeaderLength`` bytes in all, as libcurl limits its own: a site (or a sibling host setting
    /// cookies for the whole domain) can't make every request carry a header servers refuse. A cookie that
    /// doesn't fit is left out and the next ones are tried.
    /// - Parameter url: The request URL.
    /// - Returns: The field value.
    public func cookieHeader(for url: URL) -> String? {
        // Every request of a session asks, most of them of an empty store.
        guard !cookies.withLock({ $0.isEmpty }) else { return nil }
        let matching = cookies(for: url)
        guard !matching.isEmpty else { return nil }
        var header = ""
        var length = 0
        var count = 0
        for cookie in matching where count < Self.maximumCookiesPerRequest {
            let pair = "\(cookie.name)=\(cookie.value)"
            let added = (count == 0 ? 0 : 2) + pair.utf8.count
            guard length + added <= Self.maximumCookieHeaderLength else { continue }
            header += count == 0 ? pair : "; " + pair
            length += added
            count += 1
        }
        return header.isEmpty ? nil : header
    }

    /// Stores what the `Set-Cookie` fields of a response to `url` set, as Herald does for every response.
    ///
    /// The fields are applied one after the other, in the order given (RFC 6265 §5.3 processes each as it
    /// is received): a later field replaces or removes what an earlier one of the same name, domain and
    /// path set, so `a=1` followed by `a=; Max-Age=0` leaves no `a`.
    /// - Parameters:
    ///   - setCookieFields: The values of the response's `Set-Cookie` fields, in the response's order.
    ///   - url: The URL the response answered.
    /// - Returns: The cookies the response leaves stored, in the order of the fields that last set them (one
    ///   that a later field removed or that had already expired, which only removes, is not listed).
    @discardableResult
    public func store(setCookieFields: [String], from url: URL) -> [Cookie] {
        let now = Date()
        var parsed: [Cookie] = []
        for (index, field) in setCookieFields.enumerated() {
            guard
                case .store(let fields) = SetCookieParser.parse(
                    field, from: url, now: now, publicSuffixes: publicSuffixes.ruleSet)
            else { continue }
            var cookie = Cookie(fields)
            // Fields of one response keep their order among cookies of the same path length.
            cookie.creationDate = now.addingTimeInterval(Double(index) * 1e-6)
            parsed.append(cookie)
        }
        guard !parsed.isEmpty else { return [] }
        var stored: [Cookie?] = []
        update { cookies in
            var setHere: [String: Int] = [:]  // key → index in `stored`, of the cookies this response set
            for var cookie in parsed {
                if let index = setHere.removeValue(forKey: cookie.key) { stored[index] = nil }
                if cookie.isExpired(at: now) {
                    cookies[cookie.key] = nil
                    continue
                }
                if let old = cookies[cookie.key] { cookie.creationDate = old.creationDate }
                cookies[cookie.key] = cookie
                setHere[cookie.key] = stored.count
                stored.append(cookie)
            }
        }
        return stored.compactMap { $0 }
    }

    /// Stores `cookie`, replacing the one of the same name, domain and path; an expired cookie removes it.
    /// - Parameter cookie: The cookie.
    public func setCookie(_ cookie: Cookie) {
        update { cookies in
            if cookie.isExpired(at: Date()) {
                cookies[cookie.key] = nil
            } else {
                cookies[cookie.key] = cookie
            }
        }
    }

    /// Removes every cookie.
    public func removeAll() {
        update { $0.removeAll() }
    }

    /// Waits until every change made so far is written to the file (no-op for an in-memory store).
    public func flush() {
        guard fileURL != nil else { return }
        saveQueue.sync {}
    }

    /// Applies `change`, enforces the limits and schedules a save.
    private func update(_ change: (inout [String: Cookie]) -> Void) {
        cookies.withLock { cookies in
            change(&cookies)
            Self.enforceLimits(on: &cookies)
        }
        guard let fileURL else { return }
        // The save writes the cookies as they are when it runs, not a copy taken here: two threads' changes may
        // reach the queue in the other order than they were made, and the file must end as the store does.
        saveQueue.async { [self] in Self.save(cookies.withLock { Array($0.values) }, to: fileURL) }
    }

    private static func enforceLimits(on cookies: inout [String: Cookie]) {
        let now = Date()
        for (key, cookie) in cookies where cookie.isExpired(at: now) { cookies[key] = nil }
        let byDomain = Dictionary(grouping: cookies.values, by: \.domain)
        for (_, group) in byDomain where group.count > maximumCookiesPerDomain {
            for cookie in group.sorted(by: { $0.creationDate < $1.creationDate }).dropLast(maximumCookiesPerDomain) {
                cookies[cookie.key] = nil
            }
        }
        if cookies.count > maximumCookies {
            for cookie in cookies.values.sorted(by: { $0.creationDate < $1.creationDate }).dropLast(maximumCookies) {
                cookies[cookie.key] = nil
            }
        }
    }

    /// Writes the persistent cookies as JSON lines, atomically. Save queue.
    private static func save(_ cookies: [Cookie], to fileURL: URL) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var text = ""
        for cookie in cookies.sorted(by: { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) })
        where cookie.expiresAt != nil {
            guard let data = try? encoder.encode(cookie), let line = String(data: data, encoding: .utf8) else {
                continue
            }
            text += line + "\n"
        }
        // A failed write leaves the previous file in place; the cookies stay in memory.
        try? Data(text.utf8).write(to: fileURL, options: .atomic)
    }
}
