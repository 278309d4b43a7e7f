import Foundation
import HeraldNotifications
import HeraldEngine

/// What may be stored in a ``ResponseCache`` and when a stored response is fresh (RFC 9111, the subset
/// ``ResponseCache`` documents). Pure functions, so they can be tested without a server.
enum ResponseCachePolicy {
    /// The `Cache-Control` directives of `headers` (quoted arguments respected, first occurrence wins).
    static func directives(_ headers: HTTPHeaders) -> CacheControlDirectives {
        CacheControlDirectives(headers)
    }

    /// Whether `request` may be answered from the cache at all. Not one with credentials (an `Authorization`
    /// field, a user name or password in its URL): answers to such requests are never stored, so what the cache
    /// holds for the URL was someone else's, an anonymous request's.
    static func mayRead(_ request: Request) -> Bool {
        guard request.method == "GET", request.body == nil, !request.headers.contains("Range"),
            !carriesCredentials(request)
        else { return false }
        let directives = directives(request.headers)
        if directives["no-cache"] != nil || directives["no-store"] != nil { return false }
        if request.headers.values(for: "Pragma").contains(where: { $0.lowercased().contains("no-cache") }) {
            return false
        }
        return true
    }

    /// What a cache holds for a request about to start.
    enum Lookup {
        /// Fresh (or stale but acceptable to the request's `max-stale`): answer from it without the network.
        /// The entry as it answers the request: a `304` when the request's own conditions are met (see
        /// ``ResponseCachePolicy/answer(to:from:)``).
        case fresh(CachedResponse)
        /// Stale but within its `stale-while-revalidate` window: answer from it (as for `fresh`), and revalidate
        /// it in the background with ``ResponseCachePolicy/backgroundRevalidation(of:)``.
        case staleWhileRevalidate(CachedResponse)
        /// Stale but with a validator: ask the server with these conditional header fields; a `304`
        /// confirms the entry.
        case stale(CachedResponse, validators: HTTPHeaders)

        /// The stored entry, as it answers the request.
        var entry: CachedResponse {
            switch self {
            case .fresh(let entry), .staleWhileRevalidate(let entry), .stale(let entry, _): entry
            }
        }
    }

    /// Whether `request` asks for a stored response or none (`Cache-Control: only-if-cached`, RFC 9111
    /// §5.2.1.7): never the network.
    static func asksOnlyIfCached(_ request: Request) -> Bool {
        CacheControlDirectives.contains("only-if-cached", in: request.headers)
    }

    /// The answer to an `only-if-cached` request the cache can't serve: `504 Gateway Timeout` (RFC 9111
    /// §5.2.1.7), with no body, as if from the cache.
    static func gatewayTimeout(for request: Request) -> CachedResponse {
        CachedResponse(response: HTTPResponse(url: request.url, statusCode: 504, headers: [:]), data: Data())
    }

    /// The conditional request fields; a request that sets one of its own is never revalidated by Herald.
    static let conditionalFields = [
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range",
    ]

    /// The field a background revalidation carries so that its own lookup goes to the network.
    static let backgroundRevalidationField = (name: "Cache-Control", value: "max-age=0")

    /// What `cache` holds for `request` that can be used (RFC 9111 §4): a fresh entry, a stale one the
    /// request or the response allows serving, or a stale one to revalidate (it has an `ETag` or a
    /// `Last-Modified`, and the request sets no conditional field of its own). `now` is read from the clock
    /// when not given, and only once there is an entry to judge.
    static func lookup(for request: Request, in cache: any ResponseCache, now: Date? = nil) -> Lookup? {
        guard mayRead(request), let entry = cache.cachedResponse(for: request),
            varyMatches(entry, request: request)
        else { return nil }
        let now = now ?? Date()
        let requestDirectives = directives(request.headers)
        let responseDirectives = directives(entry.response.headers)
        let lifetime = freshnessLifetime(of: entry.response, storedAt: entry.storageDate) ?? 0
        let age = currentAge(of: entry, now: now)
        // `no-cache` (with or without field names): never used without revalidation (§5.2.2.4).
        let mustValidate = responseDirectives["no-cache"] != nil
        let requestMaxAge = requestDirectives["max-age"].map { deltaSeconds($0) ?? 0 }
        let minFresh = requestDirectives["min-fresh"].map { deltaSeconds($0) ?? 0 }
        var acceptable = !mustValidate && age < lifetime
        if let requestMaxAge, age > requestMaxAge { acceptable = false }
        if let minFresh, lifetime - age < minFresh { acceptable = false }
        if acceptable { return .fresh(answering(request, with: entry, age: age)) }
        let mayServeStale =
            !mustValidate && responseDirectives["must-revalidate"] == nil && requestMaxAge.map { age <= $0 } ?? true
            && minFresh == nil
        if mayServeStale, let maxStale = requestDirectives["max-stale"],
            maxStale.isEmpty || deltaSeconds(maxStale).map({ age - lifetime <= $0 }) == true
        {
            return .fresh(answering(request, with: entry, age: age))
        }
        if mayServeStale, requestMaxAge == nil,
            let window = responseDirectives["stale-while-revalidate"].flatMap(deltaSeconds), age - lifetime < window
        {
            return .staleWhileRevalidate(answering(request, with: entry, age: age))
        }
        guard !conditionalFields.contains(where: request.headers.contains) else { return nil }
        let validators = validators(of: entry.response)
        return validators.count > 0 ? .stale(entry, validators: validators) : nil
    }

    /// What a usable `entry` answers `request` with (RFC 9111 §4.3.2): a `304 Not Modified` with the stored
    /// header fields and no body when the entry is a `2xx` and the request's own preconditions say the caller
    /// holds that response — its
    /// `If-None-Match` names the entry's `ETag` (compared weakly) or is `*`, or, without `If-None-Match`, its
    /// `If-Modified-Since` is not before the entry's `Last-Modified` (or `Date`); the stored response otherwise.
    static func answer(to request: Request, from entry: CachedResponse) -> (response: HTTPResponse, body: Data) {
        let stored = entry.response
        let notModified: Bool
        if !(200..<300).contains(stored.statusCode) {
            // Preconditions apply to a successful response only (RFC 9110 §13.2.1): a stored 301 or 404 is itself.
            notModified = false
        } else if let condition = request.headers["If-None-Match"] {
            let tags = entityTags(in: condition)
            notModified =
                tags.contains("*")
                || stored.headers["ETag"].map { tag in tags.contains { weakMatch($0, tag) } } == true
        } else if let since = request.headers["If-Modified-Since"].flatMap(parseDate),
            let modified = (stored.headers["Last-Modified"] ?? stored.headers["Date"]).flatMap(parseDate)
        {
            notModified = modified <= since
        } else {
            notModified = false
        }
        guard notModified else { return (stored, entry.data) }
        var response = stored
        response.statusCode = 304
        for name in ["Content-Length", "Transfer-Encoding"] { response.headers.remove(name: name) }
        return (response, Data())
    }

    /// `entry` with the head and body it answers `request` with (see ``answer(to:from:)``), its `Age` field the
    /// entry's current age in whole seconds (RFC 9111 §4: a response used without validation gets an `Age`,
    /// replacing any it was stored with).
    private static func answering(_ request: Request, with entry: CachedResponse, age: TimeInterval) -> CachedResponse {
        var answered = entry
        (answered.response, answered.data) = answer(to: request, from: entry)
        answered.response.headers.replaceOrAdd(name: "Age", value: String(Int(max(0, min(age, 2_147_483_648)))))
        return answered
    }

    /// The entity tags of an `If-None-Match` value, `*` included, each as written (`W/"a"`, `"b"`).
    private static func entityTags(in value: String) -> [String] {
        var tags: [String] = []
        var rest = Substring(value)
        while let start = rest.firstIndex(where: { $0 != " " && $0 != "\t" && $0 != "," }) {
            rest = rest[start...]
            if rest.hasPrefix("*") {
                tags.append("*")
                rest = rest.dropFirst()
                continue
            }
            let weak = rest.hasPrefix("W/")
            let quoted = weak ? rest.dropFirst(2) : rest
            guard quoted.hasPrefix("\""), let end = quoted.dropFirst().firstIndex(of: "\"") else { break }
            tags.append(String(rest[..<quoted.index(after: end)]))
            rest = quoted[quoted.index(after: end)...]
        }
        return tags
    }

    /// Whether the caller's own conditional `request` names `stored`: an `If-None-Match` tag is its `ETag`
    /// (weakly compared; `*` names no one response), or, without `If-None-Match`, `If-Modified-Since` is its
    /// `Last-Modified`. The caller's validators may come from elsewhere (a download, an older copy), and a `304`
    /// without validators of its own then says only that the caller's copy is current, not the stored one.
    static func conditionNames(_ request: Request, stored: HTTPResponse) -> Bool {
        if let condition = request.headers["If-None-Match"] {
            guard let tag = stored.headers["ETag"] else { return false }
            return entityTags(in: condition).contains { $0 != "*" && weakMatch($0, tag) }
        }
        guard let since = request.headers["If-Modified-Since"], let modified = stored.headers["Last-Modified"]
        else { return false }
        return since == modified || parseDate(since).map { $0 == parseDate(modified) } == true
    }

    /// RFC 9110 §8.8.3.2's weak comparison: the opaque tags are equal, whichever is weak.
    private static func weakMatch(_ lhs: String, _ rhs: String) -> Bool {
        func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag) }
        return opaque(lhs) == opaque(rhs)
    }

    /// The conditional fields that revalidate `response`: `If-None-Match` from its `ETag`, `If-Modified-Since`
    /// from its `Last-Modified`.
    static func validators(of response: HTTPResponse) -> HTTPHeaders {
        var validators = HTTPHeaders()
        if let entityTag = sendableValidator(response.headers["ETag"]) {
            validators.add(name: "If-None-Match", value: entityTag)
        }
        if let lastModified = sendableValidator(response.headers["Last-Modified"]) {
            validators.add(name: "If-Modified-Since", value: lastModified)
        }
        return validators
    }

    /// A server's `ETag` or `Last-Modified` value, unless it holds a CR, LF or NUL: sent back in a conditional
    /// field, a bare CR that came in the middle of a received line would split the request (no validation of a
    /// request's fields sees the fields Herald adds itself).
    static func sendableValidator(_ value: String?) -> String? {
        guard let value, !Request.containsLineBreakOrNUL(value) else { return nil }
        return value
    }

    /// The request a background revalidation sends for `request`: the same, asking for a response no older
    /// than zero seconds, so that it revalidates the entry (or fetches anew) and stores what it gets.
    static func backgroundRevalidation(of request: Request) -> Request {
        var revalidation = request
        revalidation.headers.add(name: backgroundRevalidationField.name, value: backgroundRevalidationField.value)
        return revalidation
    }

    /// Whether `request` carries the values of the fields `entry`'s `Vary` names that the request that stored
    /// it carried (RFC 9111 §4.1): compared after joining repeated fields with `", "` and trimming; absent
    /// matches only absent. `Vary: *` never matches.
    static func varyMatches(_ entry: CachedResponse, request: Request) -> Bool {
        guard let names = varyingFieldNames(of: entry.response) else { return false }
        return names.allSatisfy { name in
            normalizedValue(of: name, in: request.headers) == normalizedValue(of: name, in: entry.varyingRequestHeaders)
        }
    }

    /// The field names `response`'s `Vary` lists, lowercased; `nil` for `Vary: *`.
    static func varyingFieldNames(of response: HTTPResponse) -> [String]? {
        var names: [String] = []
        var seen: Set<String> = []
        for vary in response.headers.values(for: "Vary") {
            for field in vary.split(separator: ",") {
                let name = field.trimmingCharacters(in: .whitespaces).lowercased()
                if name == "*" { return nil }
                if !name.isEmpty, seen.insert(name).inserted { names.append(name) }
            }
        }
        return names
    }

    /// The fields of `request` that `response`'s `Vary` names, to keep beside the entry.
    static func varyingRequestHeaders(of request: Request, for response: HTTPResponse) -> HTTPHeaders {
        var selected = HTTPHeaders()
        for name in varyingFieldNames(of: response) ?? [] {
            for value in request.headers.values(for: name) { selected.add(name: name, value: value) }
        }
        return selected
    }

    private static func normalizedValue(of name: String, in headers: HTTPHeaders) -> String? {
        let values = headers.values(for: name)
        guard !values.isEmpty else { return nil }
        return values.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
    }

    /// Whether a `304` answering a revalidation confirms `stored` (RFC 9111 §4.3.4): its `ETag`, when it has one,
    /// names the stored one (strongly compared when both are strong, weakly when either is weak: a server that
    /// weakens the tag of a body it compresses, as nginx does, answers the weak tag it was sent with a `304`
    /// carrying the strong one, and that `304` is for the stored response); without an `ETag`
    /// its `Last-Modified`, when both have one, is the stored one. A `304` without validators, or with an `ETag`
    /// where the stored response has none, confirms it (one response is stored per request).
    static func confirms(_ notModified: HTTPResponse, stored: HTTPResponse) -> Bool {
        if let tag = notModified.headers["ETag"] {
            guard let storedTag = stored.headers["ETag"] else { return true }
            return tag.hasPrefix("W/") || storedTag.hasPrefix("W/") ? weakMatch(tag, storedTag) : tag == storedTag
        }
        guard let modified = notModified.headers["Last-Modified"],
            let storedModified = stored.headers["Last-Modified"]
        else { return true }
        return modified == storedModified
            || parseDate(modified).map { $0 == parseDate(storedModified) } == true
    }

    /// `stored` updated with the header fields of the `304` that confirmed it (RFC 9111 §4.3.4): each field
    /// the `304` carries replaces the stored one of that name; framing fields are kept. The refreshed response
    /// is as old as the `304`: without a `Date` of its own, it gets `receivedAt` (RFC 9110 §6.6.1 has a cache add
    /// the time it received such a response), and the stored `Age` goes unless the `304` carries one — else the
    /// first answer's date and age would make the entry stale again as soon as it is refreshed, and every later
    /// request would ask the server.
    static func refreshed(
        _ stored: HTTPResponse, with notModified: HTTPResponse, receivedAt: Date = Date()
    ) -> HTTPResponse {
        let framing: Set<String> = ["content-length", "transfer-encoding", "connection", "content-encoding"]
        let incoming = notModified.headers.filter { !framing.contains($0.name.lowercased()) }
        let replaced = Set(incoming.map { $0.name.lowercased() })
        // The stored fields the `304` doesn't replace, then the `304`'s: one pass each, however many fields a
        // server sends (removing each name in turn would go through the list once per name).
        var headers = HTTPHeaders()
        for field in stored.headers where !replaced.contains(field.name.lowercased()) {
            headers.add(name: field.name, value: field.value)
        }
        for field in incoming { headers.add(name: field.name, value: field.value) }
        if !replaced.contains("date") {
            headers.remove(name: "Date")
            headers.add(name: "Date", value: httpDate(receivedAt))
        }
        if !replaced.contains("age") { headers.remove(name: "Age") }
        var response = stored
        response.headers = headers
        return response
    }

    /// Whether `entry` is still fresh at `now`.
    static func isFresh(_ entry: CachedResponse, now: Date = Date()) -> Bool {
        guard directives(entry.response.headers)["no-cache"] == nil,
            let lifetime = freshnessLifetime(of: entry.response, storedAt: entry.storageDate)
        else { return false }
        return currentAge(of: entry, now: now) < lifetime
    }

    /// The age of `entry` at `now` (RFC 9111 §4.2.3), with the storage date as the response time and no
    /// request delay: the larger of the `Age` value and the time from `Date` to the storage, plus the time
    /// since the storage.
    static func currentAge(of entry: CachedResponse, now: Date = Date()) -> TimeInterval {
        let headers = entry.response.headers
        let ageValue = ageValue(headers.values(for: "Age")) ?? 0
        let apparentAge = headers["Date"].flatMap(parseDate).map { max(0, entry.storageDate.timeIntervalSince($0)) }
        return max(ageValue, apparentAge ?? 0) + max(0, now.timeIntervalSince(entry.storageDate))
    }

    /// The `Age` value (RFC 9111 §5.1): the first member of the field's list, without parameters; `nil` when
    /// that is not delta-seconds (`abc`, `-1`, `1.5`), so the field is ignored.
    static func ageValue(_ fieldLines: [String]) -> TimeInterval? {
        guard let first = fieldLines.first?.split(separator: ",", omittingEmptySubsequences: false).first else {
            return nil
        }
        let member = first.split(separator: ";", omittingEmptySubsequences: false).first ?? first
        return deltaSeconds(member.trimmingCharacters(in: .whitespaces))
    }

    /// The statuses a cache may store and reuse without explicit freshness (RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The share of the time since `Last-Modified` a response without explicit freshness stays fresh.
    static let heuristicFraction = 0.1

    /// How long `response` stays fresh: `max-age`, else `Expires` minus `Date` (or minus `storedAt`), else
    /// 10% of `Date` (or `storedAt`) minus `Last-Modified` for a heuristically cacheable status (RFC 9111
    /// §4.2.2); `nil` without any of them.
    static func freshnessLifetime(of response: HTTPResponse, storedAt: Date) -> TimeInterval? {
        let directives = directives(response.headers)
        if let maxAge = directives["max-age"] {
            // An invalid max-age (not delta-seconds) means stale (RFC 9111 §4.2.1).
            return deltaSeconds(maxAge) ?? 0
        }
        let date = response.headers["Date"].flatMap(parseDate) ?? storedAt
        if let expiresText = response.headers["Expires"] {
            // An invalid Expires (such as "0") means already expired.
            guard let expires = parseDate(expiresText) else { return 0 }
            return max(0, expires.timeIntervalSince(date))
        }
        guard heuristicallyCacheable.contains(response.statusCode) || directives["public"] != nil,
            let lastModified = response.headers["Last-Modified"].flatMap(parseDate)
        else { return nil }
        return max(0, date.timeIntervalSince(lastModified)) * heuristicFraction
    }

    /// `delta-seconds` (RFC 9111 §1.2.2): one or more digits; a value too large for 31 bits means 2^31.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        let limit = 2_147_483_648
        return TimeInterval(Int(text).map { min($0, limit) } ?? limit)
    }

    /// The methods that do not change what a resource is (RFC 9110 §9.2.1): their answers invalidate nothing.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// The URLs whose stored `GET` responses `response`, the answer to `request`, invalidates (RFC 9111
    /// §4.4): for a non-error answer (`2xx`, `3xx`) to an unsafe method, the request's URL and the
    /// `Location` and `Content-Location` URLs on the same origin. Empty otherwise.
    static func invalidatedURLs(for request: Request, response: HTTPResponse?) -> [URL] {
        guard let response, (200..<400).contains(response.statusCode), !isSafe(request.method) else { return [] }
        var urls = [request.url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name],
                let url = URL(string: value, relativeTo: request.url)?.absoluteURL,
                RedirectRules.isSameOrigin(url, request.url), !urls.contains(url)
            else { continue }
            urls.append(url)
        }
        return urls
    }

    /// Whether `method` is one of ``safeMethods``, whatever its case; the usual spellings without an allocation.
    private static func isSafe(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "OPTIONS", "TRACE": true
        default: safeMethods.contains(method.uppercased())
        }
    }

    /// The entry to propose for storing a data task's outcome (RFC 9111 §3), or `nil` when it may not be
    /// stored or could never be used: neither fresh for a while nor revalidatable. `now` (the storage date)
    /// is read from the clock when not given, and only for a response that may be stored.
    /// Whether `response`, the network's answer to `request`, stands for the URL's whole response, so that
    /// when it is not stored the entry kept for the URL goes too. Not a `206` (a part of it) or a `304` (the
    /// answer to a conditional request of the caller's, which confirms an entry rather than replacing it),
    /// nor an answer to a request with a `Range` or credentials (its answer may not be anyone else's).
    static func supersedesStored(_ response: HTTPResponse, for request: Request) -> Bool {
        response.statusCode != 206 && response.statusCode != 304 && !request.headers.contains("Range")
            && !carriesCredentials(request)
    }

    /// Whether `request` carries credentials: an `Authorization` field, or a user name or password in its URL
    /// (libcurl sends them as `Authorization`). Its answer may be no one else's: never stored, never read.
    static func carriesCredentials(_ request: Request) -> Bool {
        request.headers.contains("Authorization") || request.url.user != nil || request.url.password != nil
    }

    /// What a `304` answering a request's own conditional fields does to the entry stored for the request.
    enum Freshening: Equatable {
        /// It confirms no entry (or the request carries credentials, or says `no-store`): the entry stays as it is.
        case none
        /// It confirms the entry: store this one, the entry freshened by the `304`'s fields.
        case store(CachedResponse)
        /// It confirms the entry, but freshened by its fields the entry may not be stored (`no-store`, a `Vary`
        /// of `*`, no freshness and no validator left): the entry is removed, as a whole answer's would be.
        case remove
    }

    /// The entry stored for `request` freshened by `notModified`, a `304` answering the request's own
    /// conditional fields, when that entry is the one it confirms (RFC 9111 §4.3.4: the same validator, and a
    /// stored response the request's `Vary` fields select) and the request's condition names it (see
    /// ``conditionNames(_:stored:)``). The freshened entry is judged as a whole answer would be
    /// (``proposal(for:outcome:now:)``), its `Vary` fields taken again from the request; a `Range` the request
    /// asked for is no reason to drop it, since the `304` confirms the whole entry. An answer to a request with
    /// credentials, or one saying `no-store`, leaves the entry alone.
    static func freshened(
        for request: Request, by notModified: HTTPResponse, in cache: any ResponseCache, now: Date = Date()
    ) -> Freshening {
        guard notModified.statusCode == 304, !carriesCredentials(request),
            let stored = cache.cachedResponse(for: request),
            varyMatches(stored, request: request), confirms(notModified, stored: stored.response),
            conditionNames(request, stored: stored.response)
        else { return .none }
        // A request that may have no part of its answer stored changes nothing (RFC 9111 §5.2.1.5).
        guard !CacheControlDirectives.contains("no-store", in: request.headers) else { return .none }
        let merged = TaskOutcome(
            response: refreshed(stored.response, with: notModified, receivedAt: now), body: stored.data, error: nil,
            metrics: nil)
        // The whole entry is judged, not the part a `Range` asked for: the `304` confirms all of it.
        var judged = request
        judged.headers.remove(name: "Range")
        return proposal(for: judged, outcome: merged, now: now).map { .store($0) } ?? .remove
    }

    static func proposal(for request: Request, outcome: TaskOutcome, now: Date? = nil) -> CachedResponse? {
        guard !outcome.isFromCache, outcome.error == nil, let response = outcome.response,
            (200...599).contains(response.statusCode), request.method == "GET", request.body == nil,
            supersedesStored(response, for: request)
        else { return nil }
        // `no-store` first, without keeping the directives: most responses a cache turns away say it.
        guard !CacheControlDirectives.contains("no-store", in: request.headers),
            !CacheControlDirectives.contains("no-store", in: response.headers),
            varyingFieldNames(of: response) != nil
        else { return nil }
        let responseDirectives = directives(response.headers)
        let explicit =
            responseDirectives["max-age"] != nil || response.headers.contains("Expires")
            || responseDirectives["public"] != nil || responseDirectives["private"] != nil
        guard explicit || heuristicallyCacheable.contains(response.statusCode) else { return nil }
        let now = now ?? Date()
        let entry = CachedResponse(
            response: response, data: outcome.body, storageDate: now,
            varyingRequestHeaders: varyingRequestHeaders(of: request, for: response))
        let usableFresh =
            responseDirectives["no-cache"] == nil
            && currentAge(of: entry, now: now)
                < (freshnessLifetime(of: response, storedAt: now) ?? 0)
        guard usableFresh || validators(of: response).count > 0 else { return nil }
        return entry
    }

    private static let dateFormats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",  // IMF-fixdate
        "EEEE, dd-MMM-yy HH:mm:ss zzz",  // RFC 850
        "EEE MMM d HH:mm:ss yyyy",  // asctime
    ]

    private static let formatters = Locked<[DateFormatter]>(
        dateFormats.map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            // RFC 850's two-digit year is the one within 50 years of now (RFC 9110 §5.6.7: a date more than 50
            // years ahead is in the past century); ICU's default window reaches only 20 years ahead.
            formatter.twoDigitStartDate = Calendar(identifier: .gregorian).date(
                byAdding: .year, value: -50, to: Date())
            return formatter
        })

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate(_ date: Date) -> String {
        formatters.withLock { $0[0].string(from: date) }
    }

    /// An IMF-fixdate ending in `GMT` (`Sun, 06 Nov 1994 08:49:37 GMT`), the one format RFC 9110 §5.6.7 has
    /// senders use, read without a formatter: a `DateFormatter` parse cost a cache hit more than a third of its
    /// time. Exactly that layout, with the names' usual case and a year from 1600; anything else is `nil`, and
    /// the formatters decide. Like them, it ignores the day of the week and refuses a day the month doesn't
    /// have, an hour past 23 and a second past 59.
    static func imfFixdate(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[26...].elementsEqual("GMT".utf8),
            imfSeparators.allSatisfy({ bytes[$0.offset] == $0.byte })
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let weekday = String(decoding: bytes[0..<3], as: UTF8.self)
        let monthName = String(decoding: bytes[8..<11], as: UTF8.self)
        guard ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(weekday),
            let month = imfMonths.firstIndex(of: monthName).map({ $0 + 1 }),
            let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
            let minute = number(20..<22), let second = number(23..<25),
            year >= 1600, hour < 24, minute < 60, second < 60
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...monthDays[month - 1]).contains(day) else { return nil }
        // Days from 1970-01-01 to the date in the proleptic Gregorian calendar (civil-from-days, inverted).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    private static let imfMonths = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Where an IMF-fixdate has its punctuation: `Sun, 06 Nov 1994 08:49:37 GMT`.
    private static let imfSeparators: [(offset: Int, byte: UInt8)] = [
        (3, ","), (4, " "), (7, " "), (11, " "), (16, " "), (19, ":"), (22, ":"), (25, " "),
    ].map { ($0, UInt8(ascii: $1)) }

    /// Whether `text` may be an HTTP date: printable ASCII (and tabs), as all three formats of RFC 9110 §5.6.7
    /// are. Only such text is given to a `DateFormatter`: Foundation's traps when its parse stops inside a
    /// Character (a letter followed by a combining mark, the CR of a CRLF), and the server chooses the text.
    static func mayBeHTTPDate(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }
    }

    /// Parses an HTTP date in any of the three formats RFC 9110 §5.6.7 allows. The two with a zone must
    /// name `GMT` (in any case, as browsers read it): `UTC` or any other zone makes the date invalid.
    static func parseDate(_ text: String) -> Date? {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        guard mayBeHTTPDate(trimmed) else { return nil }
        let zoned = trimmed.lowercased().hasSuffix(" gmt")
        if zoned { trimmed = trimmed.dropLast(3) + "GMT" }
        if zoned, let date = imfFixdate(trimmed) { return date }
        return formatters.withLock { formatters in
            for (index, formatter) in formatters.enumerated() where (index < 2) == zoned {
                if let date = formatter.date(from: trimmed) { return date }
            }
            return nil
        }
    }
}
