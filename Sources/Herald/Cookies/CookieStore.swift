import Dispatch
import Foundation
import HeraldCookies
import HeraldEngine
import HeraldNotifications

/// The cookies of a session (RFC 6265): stored from every response's `Set-Cookie`, sent in a `Cookie`
/// field with every request they match — on every hop, redirects and authentication round-trips
/// included, since Herald runs each hop as a transfer of its own. (One exception: the request libcurl
/// sends again with a Digest answer, inside the transfer that got the server's challenge, carries the
/// cookies that transfer started with; what that challenge's `401` sets is stored, for the requests after.)
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
///   400 days; an expired cookie removes the one of the same name, domain, host-only flag and path.
/// - The `Set-Cookie` fields of one response are applied in order, each as if it came alone.
/// - `HttpOnly` and `SameSite` are kept (and persisted) as received; `SameSite` is not enforced, as a
///   client has no top-level site.
/// - RFC 6265bis: a cookie named `__Secure-…` must be `Secure`, one named `__Host-…` also host-only with
///   `Path=/`; an `http` response can't set a cookie of the same name as a `Secure` one on an overlapping
///   domain and path (it could replace or shadow it).
/// - Limits: a name and value over 4096 bytes together are ignored; at most 50 cookies per domain, 180 per
///   site (a registrable domain and every name under it, so that one site can't push out every other site's
///   cookies) and 3000 in all; the cookies least recently stored or sent go first (RFC 6265 §5.3).
/// - A cookie whose name or value holds a control character or `;`, or whose name is empty or holds `=`, is
///   never stored, from a response, ``setCookie(_:)`` or a file: it could not be sent as it is.
///
/// ## The file format
///
/// A persistent store (``init(persistingTo:publicSuffixes:)``) keeps its **persistent** cookies (those with an expiry;
/// session cookies are never written) in a text file of JSON lines: one JSON object per cookie, with the
/// keys `name`, `value`, `domain`, `isHostOnly`, `path`, `expiresAt` and `creationDate` (seconds since
/// 1970, UTC), `isSecure`, `isHTTPOnly` and `sameSite` (`"Strict"`, `"Lax"`, `"None"`, or absent). The file
/// is rewritten (to a temporary file, then renamed over it) on a background queue after each change (until
/// ``close()``), readable
/// by its owner alone (mode `0600`: it holds sessions' credentials); ``flush()`` waits for that.
///
/// Safe to use from any thread; its methods never call back into your code.
public final class CookieStore: Sendable {
    /// The most cookies kept for one domain.
    public static let maximumCookiesPerDomain = 50
    /// The most cookies kept for one site: a registrable domain (see ``PublicSuffixList``) and every name under
    /// it, or a host that has none (an IP address, a name that is a public suffix).
    public static let maximumCookiesPerSite = 180
    /// The most cookies kept in all.
    public static let maximumCookies = 3000
    /// The largest cookie file ``init(persistingTo:publicSuffixes:)`` reads, in bytes: 3000 cookies of the
    /// longest name, value, domain and path, every character of them escaped in the JSON, fit in it.
    public static let maximumFileSize = 48 << 20

    private let jar = Locked<Jar>(Jar())
    /// The file the store keeps its persistent cookies in, with its claim on it; `nil` for an in-memory store
    /// and once ``close()`` let the file go.
    private let persisted: Locked<(url: URL, lock: CookieFileLock)?>
    private let saveQueue = DispatchQueue(label: "herald.cookie-store.save")
    /// Why the latest save failed; `nil` once one succeeds. Written on the save queue.
    private let saveFailure = Locked<HeraldError?>(nil)
    /// Whether a save is queued and hasn't started: later changes ride on it (it writes the cookies as they are
    /// when it runs), so a burst of changes costs one write, not one each.
    private let saveQueued = Locked(false)
    /// How many saves have written the file (or tried to). For tests.
    let savesRun = Locked(0)
    private let publicSuffixes: PublicSuffixList
    /// How many cookies the file ``init(persistingTo:publicSuffixes:)`` loaded held that could not be sent as
    /// they are (see ``setCookie(_:)``), or that no response could have set — a domain cookie for a public
    /// suffix, a `__Secure-` or `__Host-` name without what its prefix promises — left out; 0 for an in-memory
    /// store.
    public let unsendableCookiesSkipped: Int

    /// Creates an empty in-memory store.
    /// - Parameter publicSuffixes: The suffixes refused as cookie domains; default ``PublicSuffixList/shared``.
    public init(publicSuffixes: PublicSuffixList = .shared) {
        self.persisted = Locked(nil)
        self.publicSuffixes = publicSuffixes
        self.unsendableCookiesSkipped = 0
    }

    /// Creates a store that loads the persistent cookies of `fileURL` (in the format above) and saves them
    /// there after each change. A missing file is an empty store; it is created on the first save.
    /// Expired cookies in the file are dropped.
    ///
    /// One store to a file: the store holds an exclusive lock on `.<name>.lock` beside the file (`flock(2)`) from
    /// its creation until ``close()`` or its deallocation, after its last save. Another store on the same file —
    /// in another process, or in this one — throws ``HeraldError/Code/fileInUse``: each one's saves would write
    /// its own cookies over the other's. Share one store between the sessions of a process instead
    /// (``SessionConfiguration/httpCookieStore``), or `close()` the old one before making its successor. The
    /// file's folder must exist and be writable. When `fileURL` is a symbolic link, the file it points to is the
    /// store's: read, saved and locked there, in its folder (not a link another user planted in a sticky,
    /// world-writable folder such as `/tmp`, which is not followed, as the kernel's `protected_symlinks` has it).
    /// - Parameters:
    ///   - fileURL: The file.
    ///   - publicSuffixes: The suffixes refused as cookie domains; default ``PublicSuffixList/shared``.
    /// A line holding a cookie that could not be sent as it is (see ``setCookie(_:)``; an earlier version
    /// stored such cookies) is left out and counted in ``unsendableCookiesSkipped``; the rest load.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileInUse`` when another store holds the file, and with
    ///   ``HeraldError/Code/fileIO`` when the lock file beside it can't be made, or the file exists but can't be
    ///   read, is larger than ``maximumFileSize``, or a line of it is not a cookie (the message names the line).
    public init(persistingTo fileURL: URL, publicSuffixes: PublicSuffixList = .shared) throws(HeraldError) {
        // The file a symbolic link names: saved there (a save renames over the link itself otherwise, and the
        // target never changes again), and locked there, so that two stores opened through two links exclude
        // each other.
        let fileURL = Self.linkTarget(of: fileURL)
        // Before the file is read: what is loaded is then what no other store writes meanwhile.
        self.persisted = Locked((fileURL, try CookieFileLock(for: fileURL)))
        self.publicSuffixes = publicSuffixes
        // What a save cut short left (the process killed between writing and renaming): a whole copy of the
        // cookies under a temporary name, which nothing else would ever remove. No save of another store runs
        // meanwhile: the lock is this store's.
        Self.removeTemporaryFiles(of: fileURL)
        guard let contents = try Self.readFile(fileURL) else {
            unsendableCookiesSkipped = 0
            return
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let now = Date()
        var loaded: [Cookie] = []
        var skipped = 0
        // Lines end at LF, a CR before it dropped (a file edited or copied on another system).
        let lines = contents.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
            .map { $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0 }.filter { !$0.isEmpty }
        for (index, line) in lines.enumerated() {
            let decoded: Cookie
            do {
                decoded = try decoder.decode(Cookie.self, from: Data(line))
            } catch {
                throw HeraldError(
                    .fileIO, "Line \(index + 1) of the cookie file \(fileURL.path) is not a cookie.", underlying: error)
            }
            // Through the initializer, which lowercases the domain and drops a leading dot, as for any cookie.
            let cookie = Cookie(
                name: decoded.name, value: decoded.value, domain: decoded.domain, isHostOnly: decoded.isHostOnly,
                path: decoded.path, expiresAt: decoded.expiresAt, isSecure: decoded.isSecure,
                isHTTPOnly: decoded.isHTTPOnly, sameSite: decoded.sameSite, creationDate: decoded.creationDate)
            if cookie.malformation != nil || Self.refusesOnLoad(cookie, publicSuffixes: publicSuffixes) {
                skipped += 1
            } else if !cookie.isExpired(at: now) {
                // A lifetime reaching past 400 days from now is 400 days, as for a cookie that arrives.
                var cookie = cookie
                let latest = now.addingTimeInterval(TimeInterval(SetCookieParser.maximumLifetime))
                cookie.expiresAt = cookie.expiresAt.map { min($0, latest) }
                loaded.append(cookie)
            }
        }
        unsendableCookiesSkipped = skipped
        // The file keeps no time of use: the oldest are taken as the least recently used.
        loaded.sort { $0.creationDate < $1.creationDate }
        jar.withLock { jar in
            for cookie in loaded { jar.put(cookie, site: site(of: cookie)) }
            jar.enforceLimits()
        }
    }

    /// The file `url` names once its symbolic links are followed (a link to a file not made yet included); `url`
    /// itself when it is no link. A chain longer than the kernel follows (40 links) is left as it is: its open
    /// fails as the kernel's would.
    private static func linkTarget(of url: URL) -> URL {
        var current = url
        for _ in 0..<40 {
            var status = stat()
            guard lstat(current.path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK,
                followsLink(owner: status.st_uid, in: current.deletingLastPathComponent()),
                let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: current.path)
            else { return current }
            current =
                destination.hasPrefix("/")
                ? URL(fileURLWithPath: destination)
                : current.deletingLastPathComponent().appendingPathComponent(destination)
        }
        return current
    }

    /// Whether a link owned by `owner` in `folder` is followed: as the kernel's `protected_symlinks` has it, not one
    /// another user planted in a sticky, world-writable folder (`/tmp`), which would have the store write where
    /// that user chose. Such a link is left as it is, and opening it fails as the kernel refuses it.
    private static func followsLink(owner: uid_t, in folder: URL) -> Bool {
        guard owner != geteuid(), owner != 0 else { return true }
        var status = stat()
        guard stat(folder.path, &status) == 0 else { return false }
        return status.st_mode & S_ISVTX == 0 || status.st_mode & S_IWOTH == 0
    }

    /// The bytes of the cookie file, `nil` when there is none. Read from one descriptor, with a bound: a regular
    /// file of at most ``maximumFileSize`` bytes (a FIFO, which would block, or a device, which may never end,
    /// is refused, and so is a file that grows past the bound while it is read).
    private static func readFile(_ fileURL: URL) throws(HeraldError) -> Data? {
        let descriptor = open(fileURL.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw HeraldError.fileFailure("Cannot read the cookie file", url: fileURL)
        }
        defer { Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw HeraldError.fileFailure("Cannot read the cookie file", url: fileURL)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw HeraldError(.fileIO, "The cookie file \(fileURL.path) is not a regular file.")
        }
        let tooLarge = { (size: Int) in
            HeraldError(
                .fileIO,
                "The cookie file \(fileURL.path) holds \(size) bytes, more than the \(maximumFileSize) a store of "
                    + "\(maximumCookies) cookies needs.")
        }
        guard status.st_size <= maximumFileSize else { throw tooLarge(Int(status.st_size)) }
        // One byte more than its size: a file that grew since (written behind the lock's back) is refused, not cut
        // short, and never read past the bound.
        let size = Int(status.st_size)
        var data = Data(count: size + 1)
        var length = 0
        let failed = data.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            while length < buffer.count {
                let count = read(descriptor, base + length, buffer.count - length)
                if count < 0, errno == EINTR { continue }
                if count < 0 { return true }
                if count == 0 { break }
                length += count
            }
            return false
        }
        if failed { throw HeraldError.fileFailure("Cannot read the cookie file", url: fileURL) }
        guard length <= size else {
            throw HeraldError(.fileIO, "The cookie file \(fileURL.path) grew while it was read.")
        }
        data.count = length
        return data
    }

    /// Every cookie kept and not expired, by domain, path and name.
    public var allCookies: [Cookie] {
        let now = Date()
        return jar.withLock { $0.entries.values.map(\.cookie) }.filter { !$0.isExpired(at: now) }
            .sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
    }

    /// The cookies sent with a request to `url`, in the order of the `Cookie` field: longer paths first,
    /// then older cookies first (RFC 6265 §5.4).
    /// - Parameters:
    ///   - url: The request URL.
    ///   - date: The time of the request; default now.
    /// - Returns: The matching cookies.
    public func cookies(for url: URL, at date: Date = Date()) -> [Cookie] {
        guard let target = Cookie.Target(url) else { return [] }
        return jar.withLock { Self.matching($0, target, at: date) }
    }

    /// The cookies of `jar` sent to `target` at `date`, in the order of the `Cookie` field.
    private static func matching(_ jar: borrowing Jar, _ target: Cookie.Target, at date: Date) -> [Cookie] {
        jar.entries.values.lazy.map(\.cookie).filter { $0.matches(target, at: date) }
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
    /// - Parameter url: The request URL. Its host and path are taken as libcurl sends them (`127.1` is
    ///   `127.0.0.1`, `/a/../b` is `/b`), as for the URL a response is stored from.
    /// - Returns: The field value.
    public func cookieHeader(for url: URL) -> String? {
        // Every request of a session asks, most of them of an empty store: that answer costs one lock, and no
        // work on the URL.
        guard !jar.withLock({ $0.entries.isEmpty }), let target = Cookie.Target(url) else { return nil }
        let now = Date()
        // One lock for the match and the use it counts.
        return jar.withLock { jar -> String? in
            var header = ""
            var length = 0
            var count = 0
            for cookie in Self.matching(jar, target, at: now) where count < Self.maximumCookiesPerRequest {
                let pair = "\(cookie.name)=\(cookie.value)"
                let added = (count == 0 ? 0 : 2) + pair.utf8.count
                guard length + added <= Self.maximumCookieHeaderLength else { continue }
                header += count == 0 ? pair : "; " + pair
                length += added
                count += 1
                jar.touch(cookie.key)
            }
            return count == 0 ? nil : header
        }
    }

    /// Stores what the `Set-Cookie` fields of a response to `url` set, as Herald does for every response.
    ///
    /// The fields are applied one after the other, in the order given (RFC 6265 §5.3 processes each as it
    /// is received): a later field replaces or removes what an earlier one of the same name, domain, host-only
    /// flag and path set, so `a=1` followed by `a=; Max-Age=0` leaves no `a`.
    /// - Parameters:
    ///   - setCookieFields: The values of the response's `Set-Cookie` fields, in the response's order.
    ///   - url: The URL the response answered; its host and path are taken as libcurl sends them (`127.1` is
    ///     `127.0.0.1`, `/a/../b` is `/b`), as for a request's URL.
    /// - Returns: The cookies the response leaves stored, in the order of the fields that last set them (one
    ///   that a later field removed or that had already expired, which only removes, is not listed).
    @discardableResult
    public func store(setCookieFields: [String], from url: URL) -> [Cookie] {
        // Where the response really came from: the host and path as libcurl sent them, as a request is matched.
        let url = ParsedURL.asSent(url)
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
        let sites = parsed.map(site(of:))
        let isSecureResponse = url.scheme?.lowercased() == "https"
        var stored: [Cookie?] = []
        update { jar in
            var setHere: [String: Int] = [:]  // key → index in `stored`, of the cookies this response set
            // The Secure cookies held, by name, read once: a plain response can neither add nor remove one, and a
            // look through the whole jar for each field would make a head of many fields quadratic.
            let secureByName = isSecureResponse ? [:] : jar.secureCookiesByName()
            for (var cookie, site) in zip(parsed, sites) {
                // RFC 6265bis: a plain response can neither replace nor shadow a Secure cookie.
                if let secure = secureByName[cookie.name], secure.contains(where: { Jar.shadows($0, cookie) }) {
                    continue
                }
                if let index = setHere.removeValue(forKey: cookie.key) { stored[index] = nil }
                if cookie.isExpired(at: now) {
                    jar.entries[cookie.key] = nil
                    continue
                }
                if let old = jar.entries[cookie.key] { cookie.creationDate = old.cookie.creationDate }
                jar.put(cookie, site: site)
                setHere[cookie.key] = stored.count
                stored.append(cookie)
            }
        }
        // What the limits removed again is not stored either.
        return jar.withLock { jar in stored.compactMap { $0 }.filter { jar.entries[$0.key] != nil } }
    }

    /// Stores `cookie`, replacing the one of the same name, domain, host-only flag and path (RFC 6265bis: a
    /// `Domain` cookie doesn't replace a host-only one); an expired cookie removes it.
    ///
    /// A cookie that could not be sent as it is — a name or value with a control character or `;`, an empty
    /// name or one with `=`, a domain or path with a control character, a path not starting with `/` — is
    /// not stored: it could otherwise add fields to every request it goes with. Nor is one no response could
    /// set, which the file would not give back either: a domain cookie for a public suffix (`github.io`), or a
    /// name whose `__Secure-` or `__Host-` prefix promises what the cookie lacks.
    /// - Parameter cookie: The cookie.
    /// - Returns: Whether the cookie was accepted (and so stored, or its namesake removed).
    @discardableResult
    public func setCookie(_ cookie: Cookie) -> Bool {
        guard cookie.malformation == nil, !Self.refusesOnLoad(cookie, publicSuffixes: publicSuffixes) else {
            return false
        }
        let site = site(of: cookie)
        update { jar in
            if cookie.isExpired(at: Date()) {
                jar.entries[cookie.key] = nil
            } else {
                jar.put(cookie, site: site)
            }
        }
        return true
    }

    /// Whether a cookie read from the file is one no response could have set here, so that a file from an
    /// older list of public suffixes, or edited, can't send it: a domain cookie for a public suffix, or a
    /// name whose `__Secure-` or `__Host-` prefix (in any case) promises what the cookie lacks.
    private static func refusesOnLoad(_ cookie: Cookie, publicSuffixes: PublicSuffixList) -> Bool {
        if !cookie.isHostOnly, publicSuffixes.isPublicSuffix(cookie.domain) { return true }
        return SetCookieParser.namePrefixBroken(
            name: cookie.name, isSecure: cookie.isSecure, isHostOnly: cookie.isHostOnly, path: cookie.path) != nil
    }

    /// Removes every cookie.
    public func removeAll() {
        update { $0.entries.removeAll() }
    }

    /// Waits until every change made so far is written to the file (no-op for an in-memory store), and says
    /// whether it was.
    ///
    /// - Returns: `nil` when the latest save succeeded (or there was nothing to save); otherwise why it
    ///   failed, a ``HeraldError/Code/fileIO`` error: the folder is gone or not writable, the disk is full. The
    ///   file then still holds what the last successful save wrote, and the cookies are in memory; the next
    ///   change tries again.
    @discardableResult
    public func flush() -> HeraldError? {
        guard persisted.withLock({ $0 != nil }) else { return nil }
        saveQueue.sync {}
        return saveFailure.withLock { $0 }
    }

    /// Writes the changes made so far to the file, then lets the file go: another store may take it at once
    /// (``init(persistingTo:publicSuffixes:)``), and this one keeps its cookies in memory only from now on.
    /// For a store that may outlive its use, held by a session you are replacing: without it the file is let go
    /// only when the store is deallocated. Does nothing for an in-memory store, or a second time.
    ///
    /// - Returns: `nil` when the last save succeeded (or there was nothing to save); otherwise why it failed, a
    ///   ``HeraldError/Code/fileIO`` error, as ``flush()`` says. After the first call, `nil`.
    @discardableResult
    public func close() -> HeraldError? {
        guard persisted.withLock({ $0 != nil }) else { return nil }
        // On the save queue, after every save queued so far: a save queued later finds no file and writes
        // nothing.
        return saveQueue.sync {
            persisted.withLock { $0 = nil }
            return saveFailure.withLock { $0 }
        }
    }

    /// Calls `body` once every change made so far is written (at once for an in-memory store), without
    /// blocking the caller: for a session's invalidation, which a program may exit after.
    func whenSaved(then body: @escaping @Sendable () -> Void) {
        guard persisted.withLock({ $0 != nil }) else { return body() }
        saveQueue.async(execute: body)
    }

    /// Applies `change`, enforces the limits and schedules a save.
    private func update(_ change: (inout Jar) -> Void) {
        jar.withLock { jar in
            change(&jar)
            jar.enforceLimits()
        }
        guard persisted.withLock({ $0 != nil }) else { return }
        // The save writes the cookies as they are when it runs, not a copy taken here: two threads' changes may
        // reach the queue in the other order than they were made, and the file must end as the store does. The
        // file is read when it runs, too: after ``close()``, there is none.
        // Queued under the flag's lock: a change that finds a save already marked queued then knows it is on the
        // queue, so a ``flush()`` or ``whenSaved(_:)`` after it waits for that save.
        saveQueued.withLock { queued in
            guard !queued else { return }
            queued = true
            saveQueue.async { [self] in
                // Cleared before the cookies are read: a change made after this point queues a save of its own.
                saveQueued.withLock { $0 = false }
                guard let fileURL = persisted.withLock({ $0?.url }) else { return }
                savesRun.withLock { $0 += 1 }
                let failure = Self.save(jar.withLock { $0.entries.values.map(\.cookie) }, to: fileURL)
                saveFailure.withLock { $0 = failure }
            }
        }
    }

    /// The site `cookie` counts against: its domain's registrable domain, or the domain itself when it has none.
    private func site(of cookie: Cookie) -> String {
        // A host written with its root's dot (`x1.evil.com.`) counts against the site of the host without it: as its
        // own site, every such host of one domain would have its own limit, and one site could push out the rest.
        let domain = cookie.domain.hasSuffix(".") ? String(cookie.domain.dropLast()) : cookie.domain
        return publicSuffixes.registrableDomain(for: domain) ?? domain
    }

    /// Writes the persistent cookies as JSON lines, atomically and durably: to a temporary file beside it,
    /// synced, renamed over it, and the folder synced, so that a crash of the machine leaves the old file or
    /// the new one, never an empty or torn one. Save queue.
    /// - Returns: Why it failed, or `nil`.
    private static func save(_ cookies: [Cookie], to fileURL: URL) -> HeraldError? {
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
        let folder = fileURL.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(
            ".\(fileURL.lastPathComponent).\(UUID().uuidString.lowercased())")
        // The failure as `errno` says it when this is called: right after the call that failed.
        let failed = { HeraldError.fileFailure("Cannot save the cookie file", url: fileURL) }
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return failed() }
        let written = Array(text.utf8).withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        let synced = written && fsync(descriptor) == 0
        let failure = synced ? nil : failed()
        Glibc.close(descriptor)
        guard synced, rename(temporary.path, fileURL.path) == 0 else {
            // Made before the unlink, which would change `errno`.
            let error = failure ?? failed()
            unlink(temporary.path)
            return error
        }
        // The rename itself is durable once the folder is synced.
        let folderDescriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            Glibc.close(folderDescriptor)
        }
        return nil
    }

    /// Removes the temporary files saves of `fileURL` left (`.<name>.<UUID>` beside it); never the lock file.
    private static func removeTemporaryFiles(of fileURL: URL) {
        let folder = fileURL.deletingLastPathComponent()
        let prefix = ".\(fileURL.lastPathComponent)."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            let suffix = name.dropFirst(prefix.count)
            guard suffix.count == 36, let uuid = UUID(uuidString: String(suffix)),
                uuid.uuidString.lowercased() == suffix
            else { continue }
            unlink(folder.appendingPathComponent(name).path)
        }
    }
}

/// The cookies of a store and when each was last stored or sent.
private struct Jar {
    struct Entry {
        var cookie: Cookie
        /// The site the cookie counts against (see `CookieStore.maximumCookiesPerSite`).
        let site: String
        /// The `clock` of the cookie's last store or send: the lowest goes first when a limit is reached.
        var lastUse: UInt64
    }

    var entries: [String: Entry] = [:]
    /// Counts stores and sends, so that uses are ordered even within one clock tick.
    private var clock: UInt64 = 0

    /// Stores `cookie`, replacing its namesake, as just used.
    mutating func put(_ cookie: Cookie, site: String) {
        clock += 1
        entries[cookie.key] = Entry(cookie: cookie, site: site, lastUse: clock)
    }

    /// The Secure cookies stored, by name.
    func secureCookiesByName() -> [String: [Cookie]] {
        var byName: [String: [Cookie]] = [:]
        for entry in entries.values where entry.cookie.isSecure {
            byName[entry.cookie.name, default: []].append(entry.cookie)
        }
        return byName
    }

    /// Whether `cookie`, from a plain response, would replace or shadow `held`, a Secure cookie: the same name,
    /// domains that match either way, and a path of `cookie`'s inside `held`'s (RFC 6265bis §5.7, step 16).
    static func shadows(_ held: Cookie, _ cookie: Cookie) -> Bool {
        held.isSecure && held.name == cookie.name
            && (CookieRules.domainMatches(held.domain, cookie.domain)
                || CookieRules.domainMatches(cookie.domain, held.domain))
            && CookieRules.pathMatches(cookie.path, held.path)
    }

    /// Marks the cookie of `key` as just sent.
    mutating func touch(_ key: String) {
        clock += 1
        entries[key]?.lastUse = clock
    }

    /// Removes expired cookies, then the least recently used of a domain, a site, or the whole store over its
    /// limit.
    mutating func enforceLimits() {
        let now = Date()
        for (key, entry) in entries where entry.cookie.isExpired(at: now) { entries[key] = nil }
        trim(CookieStore.maximumCookiesPerDomain) { $0.cookie.domain }
        trim(CookieStore.maximumCookiesPerSite) { $0.site }
        if entries.count > CookieStore.maximumCookies {
            for entry in entries.values.sorted(by: { $0.lastUse < $1.lastUse }).dropLast(CookieStore.maximumCookies) {
                entries[entry.cookie.key] = nil
            }
        }
    }

    /// Keeps at most `limit` cookies of each group, the most recently used.
    private mutating func trim(_ limit: Int, by group: (Entry) -> String) {
        guard entries.count > limit else { return }
        for (_, members) in Dictionary(grouping: entries.values, by: group) where members.count > limit {
            for entry in members.sorted(by: { $0.lastUse < $1.lastUse }).dropLast(limit) {
                entries[entry.cookie.key] = nil
            }
        }
    }
}
