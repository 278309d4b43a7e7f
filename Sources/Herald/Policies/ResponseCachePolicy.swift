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

    /// Whether `request` may be answered from the cache at all.
    static func mayRead(_ request: Request) -> Bool {
        guard request.method == "GET", request.body == nil, !request.headers.contains("Range") else { return false }
        let directives = directives(request.headers)
        if directives["no-cache"] != nil || directives["no-store"] != nil { return false }
        if request.headers.values(for: "Pragma").contains(where: { $0.lowercased().contains("no-cache") }) {
            return false
        }
        return true
    }

    /// What a cache holds for a request about to start.
    enum Lookup {
        /// Fresh: answer from it without the network.
        case fresh(CachedResponse)
        /// Stale but with a validator: ask the server with these conditional header fields; a `304`
        /// confirms the entry.
        case stale(CachedResponse, validators: HTTPHeaders)
    }

    /// What `cache` holds for `request` that can be used: a fresh entry, or a stale one to revalidate
    /// (it has an `ETag` or a `Last-Modified`, and the request sets no conditional field of its own).
    static func lookup(for request: Request, in cache: any ResponseCache, now: Date = Date()) -> Lookup? {
        guard mayRead(request), let entry = cache.cachedResponse(for: request) else { return nil }
        if isFresh(entry, now: now) { return .fresh(entry) }
        let conditional = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]
        guard !conditional.contains(where: request.headers.contains) else { return nil }
        var validators = HTTPHeaders()
        if let entityTag = entry.response.headers["ETag"] {
            validators.add(name: "If-None-Match", value: entityTag)
        }
        if let lastModified = entry.response.headers["Last-Modified"] {
            validators.add(name: "If-Modified-Since", value: lastModified)
        }
        return validators.count > 0 ? .stale(entry, validators: validators) : nil
    }

    /// `stored` updated with the header fields of the `304` that confirmed it (RFC 9111 §4.3.4): each field
    /// the `304` carries replaces the stored one of that name; framing fields are kept.
    static func refreshed(_ stored: HTTPResponse, with notModified: HTTPResponse) -> HTTPResponse {
        let framing: Set<String> = ["content-length", "transfer-encoding", "connection", "content-encoding"]
        var headers = stored.headers
        var replaced: Set<String> = []
        for field in notModified.headers where !framing.contains(field.name.lowercased()) {
            if replaced.insert(field.name.lowercased()).inserted { headers.remove(name: field.name) }
            headers.add(name: field.name, value: field.value)
        }
        var response = stored
        response.headers = headers
        return response
    }

    /// Whether `entry` is still fresh at `now`.
    static func isFresh(_ entry: CachedResponse, now: Date = Date()) -> Bool {
        guard let lifetime = freshnessLifetime(of: entry.response, storedAt: entry.storageDate) else { return false }
        let initialAge = entry.response.headers["Age"].flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }
        let age = max(0, initialAge ?? 0) + max(0, now.timeIntervalSince(entry.storageDate))
        return age < lifetime
    }

    /// How long `response` stays fresh: `max-age`, else `Expires` minus `Date` (or minus `storedAt`);
    /// `nil` without either (no heuristic freshness).
    static func freshnessLifetime(of response: HTTPResponse, storedAt: Date) -> TimeInterval? {
        let directives = directives(response.headers)
        if let maxAge = directives["max-age"] {
            // An invalid max-age (not delta-seconds) means stale (RFC 9111 §4.2.1).
            return deltaSeconds(maxAge) ?? 0
        }
        guard let expiresText = response.headers["Expires"] else { return nil }
        // An invalid Expires (such as "0") means already expired.
        guard let expires = parseDate(expiresText) else { return 0 }
        let date = response.headers["Date"].flatMap(parseDate) ?? storedAt
        return max(0, expires.timeIntervalSince(date))
    }

    /// `delta-seconds` (RFC 9111 §1.2.2): one or more digits; a value too large for 31 bits means 2^31.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        let limit = 2_147_483_648
        return TimeInterval(Int(text).map { min($0, limit) } ?? limit)
    }

    /// The entry to propose for storing a data task's outcome, or `nil` when it may not be stored.
    static func proposal(for request: Request, outcome: TaskOutcome, now: Date = Date()) -> CachedResponse? {
        guard !outcome.isFromCache, outcome.error == nil, let response = outcome.response, response.statusCode == 200,
            request.method == "GET", request.body == nil, !request.headers.contains("Range"),
            !request.headers.contains("Authorization")
        else { return nil }
        if directives(request.headers)["no-store"] != nil { return nil }
        let responseDirectives = directives(response.headers)
        if responseDirectives["no-store"] != nil || responseDirectives["no-cache"] != nil { return nil }
        for vary in response.headers.values(for: "Vary") {
            for field in vary.split(separator: ",") {
                let name = field.trimmingCharacters(in: .whitespaces).lowercased()
                if !name.isEmpty, name != "accept-encoding" { return nil }
            }
        }
        guard let lifetime = freshnessLifetime(of: response, storedAt: now), lifetime > 0 else { return nil }
        return CachedResponse(response: response, data: outcome.body, storageDate: now)
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
            return formatter
        })

    /// Parses an HTTP date in any of the three formats RFC 9110 §5.6.7 allows.
    static func parseDate(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return formatters.withLock { formatters in
            for formatter in formatters {
                if let date = formatter.date(from: trimmed) { return date }
            }
            return nil
        }
    }
}
