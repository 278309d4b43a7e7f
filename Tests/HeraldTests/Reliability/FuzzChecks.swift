// The fuzz targets' checks, shared by the fuzz entry point (Fuzz/HeraldFuzzTargets.swift, with which Fuzz/run.sh
// compiles this file into the Herald module itself, defining HERALD_FUZZ_BUILD) and by FuzzRegressionTests, which
// replays the corpora and past crashes through the same code in `make test`.
import CNetlink
import Foundation
import HeraldCookies
import HeraldNetlink

#if HERALD_FUZZ_BUILD
    import HeraldEngine
#else
    @testable import Herald
    @testable import HeraldEngine
#endif

/// The checks of the targets after `json`, each giving why its input broke an invariant, or `nil`.
enum FuzzChecks {
    // MARK: sse

    static func serverSentEvents(_ data: Data) -> String? {
        guard let first = data.first else { return nil }
        let input = [UInt8](data.dropFirst())
        let chunkSize = Int(first % 16) + 1
        for maximum in [ServerSentEventParser.defaultMaximumEventSize, 48] {
            var whole = ServerSentEventParser(maximumEventSize: maximum)
            let expected = whole.parse(input)
            var chunked = ServerSentEventParser(maximumEventSize: maximum)
            var events: [ServerSentEvent] = []
            var start = 0
            while start < input.count {
                let end = min(input.count, start + chunkSize)
                // Odd chunks through the copying path (a collection without contiguous storage).
                events +=
                    start / chunkSize % 2 == 0
                    ? chunked.parse(input[start..<end]) : chunked.parse(input[start..<end].lazy.map { $0 })
                start = end
            }
            guard events == expected, chunked.lastEventID == whole.lastEventID,
                chunked.reconnectionTime == whole.reconnectionTime,
                chunked.exceededMaximumEventSize == whole.exceededMaximumEventSize
            else {
                return "chunks of \(chunkSize) (limit \(maximum)) give \(events), not \(expected)"
            }
            for event in expected {
                if event.id.utf8.contains(0) { return "an event ID with a NUL: \(event.id.debugDescription)" }
                if event.event.isEmpty { return "an event without a type" }
                if let retry = event.retry, retry < 0 { return "a negative retry \(retry)" }
            }
            if let time = whole.reconnectionTime, time < 0 { return "a negative reconnection time \(time)" }
        }
        return nil
    }

    // MARK: set-cookie

    /// The origins a fuzzed `Set-Cookie` is matched against: parsed only, never contacted.
    static let cookieHosts = [
        "https://www.example.com/docs/a", "http://sub.city.kobe.jp/", "https://www.xn--85x722f.xn--55qx5d.cn/x/y/z",
        "http://127.0.0.1:8080/p/q",
    ].map { URL(string: $0)! }

    static let cookieRules = PublicSuffixRules(
        parsing: "com\nco.uk\nuk\njp\n*.kobe.jp\n!city.kobe.jp\ncn\n公司.cn\ngithub.io\n")

    /// A fixed "now", on a whole second: cookie expiries re-format exactly.
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    static func setCookie(_ data: Data) -> String? {
        guard let first = data.first else { return nil }
        let url = cookieHosts[Int(first) % cookieHosts.count]
        let field = String(decoding: data.dropFirst(), as: UTF8.self)
        if let date = CookieDate.parse(field), let text = imfFixdate(date), CookieDate.parse(text) != date {
            return "the cookie date \(date) of \(field.debugDescription) reads back from \(text) differently"
        }
        guard case .store(let fields) = SetCookieParser.parse(field, from: url, now: now, publicSuffixes: cookieRules)
        else { return nil }
        if let problem = Cookie(fields).malformation { return "a stored cookie with \(problem): \(fields)" }
        let host = IDNA.asciiName(url.host!)!
        if fields.isHostOnly ? fields.domain != host : !CookieMatching.domainMatches(host, fields.domain) {
            return "the cookie's domain \(fields.domain) does not match the host \(host)"
        }
        let lowercasedName = fields.name.lowercased()
        if lowercasedName.hasPrefix("__secure-") || lowercasedName.hasPrefix("__host-"), !fields.isSecure {
            return "a prefixed cookie without Secure: \(fields.name)"
        }
        if lowercasedName.hasPrefix("__host-"), !fields.isHostOnly || fields.path != "/" {
            return "a __Host- cookie with a domain or another path: \(fields)"
        }
        // Re-serialised as a server would send the stored cookie, it must parse to the same one.
        var text = "\(fields.name)=\(fields.value)"
        if !fields.isHostOnly { text += "; Domain=\(fields.domain)" }
        text += "; Path=\(fields.path)"
        if fields.isSecure { text += "; Secure" }
        if fields.isHTTPOnly { text += "; HttpOnly" }
        if let sameSite = fields.sameSite { text += "; SameSite=\(sameSite)" }
        let expiry = fields.expiresAt.flatMap(imfFixdate)
        if let expiry { text += "; Expires=\(expiry)" }
        guard case .store(var again) = SetCookieParser.parse(text, from: url, now: now, publicSuffixes: cookieRules)
        else { return "the stored cookie \(fields) re-serialised as \(text.debugDescription) is ignored" }
        if expiry == nil { again.expiresAt = fields.expiresAt }
        return again == fields ? nil : "the stored cookie \(fields) re-serialised parses to \(again)"
    }

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), when it is on a whole second of a year from
    /// 1601 to 9999; `nil` otherwise.
    static func imfFixdate(_ date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds == seconds.rounded(), abs(seconds) < 1e12 else { return nil }
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil, (1601...9999).contains(Int(parts.tm_year) + 1900) else { return nil }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    // MARK: cookie-file

    /// Where the cookie-file target writes its input: one file per process.
    static let cookieFilePath = "/tmp/herald-fuzz/cookies-\(getpid()).jsonl"

    static let cookieSuffixes = PublicSuffixList(
        rules: "com\nco.uk\nuk\njp\n*.kobe.jp\n!city.kobe.jp\ncn\n公司.cn\ngithub.io\n", source: .builtIn)

    static func cookieFile(_ data: Data, path: String) -> String? {
        let url = URL(fileURLWithPath: path)
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard (try? data.write(to: url)) != nil else { return "cannot write \(path)" }
        // The store is released before the file is loaded again: a store holds its file, and a second one on it
        // is refused.
        guard let loaded = (try? CookieStore(persistingTo: url, publicSuffixes: cookieSuffixes))?.allCookies else {
            return nil
        }
        for cookie in loaded where cookie.malformation != nil {
            return "a loaded cookie with \(cookie.malformation!): \(cookie)"
        }
        // The file a save writes (CookieStore.save's encoding) loads again to the same cookies.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var text = ""
        for cookie in loaded where cookie.expiresAt != nil {
            guard let line = try? encoder.encode(cookie) else { return "a loaded cookie does not encode: \(cookie)" }
            text += String(decoding: line, as: UTF8.self) + "\n"
        }
        guard (try? Data(text.utf8).write(to: url)) != nil else { return "cannot write \(path)" }
        let again: CookieStore
        do {
            again = try CookieStore(persistingTo: url, publicSuffixes: cookieSuffixes)
        } catch {
            return "the saved cookies do not load: \(error)"
        }
        let reloaded = again.allCookies
        let persistent = loaded.filter { $0.expiresAt != nil }
        func same(_ lhs: Cookie, _ rhs: Cookie) -> Bool {
            // Dates go through seconds since 1970 as text: equal to well within a millisecond.
            func close(_ a: Date?, _ b: Date?) -> Bool {
                a == nil && b == nil || a.flatMap { a in b.map { abs(a.timeIntervalSince($0)) < 1e-3 } } == true
            }
            return lhs.name == rhs.name && lhs.value == rhs.value && lhs.domain == rhs.domain
                && lhs.isHostOnly == rhs.isHostOnly && lhs.path == rhs.path && lhs.isSecure == rhs.isSecure
                && lhs.isHTTPOnly == rhs.isHTTPOnly && lhs.sameSite == rhs.sameSite
                && close(lhs.expiresAt, rhs.expiresAt) && close(lhs.creationDate, rhs.creationDate)
        }
        guard reloaded.count == persistent.count, zip(reloaded, persistent).allSatisfy(same) else {
            return "the saved cookies \(persistent) load again as \(reloaded)"
        }
        return nil
    }

    // MARK: auth-challenge

    static func authenticationChallenge(_ data: Data) -> String? {
        let text = String(decoding: data, as: UTF8.self)
        let challenges = AuthenticationChallenge.challenges(in: text)
        for challenge in challenges {
            if challenge.scheme.isEmpty || challenge.scheme.contains(where: { " \t,=".contains($0) }) {
                return "a scheme that is not a token: \(challenge.scheme.debugDescription)"
            }
            for key in challenge.parameters.keys where key != key.lowercased() || key.isEmpty {
                return "a parameter name not lowercased or empty: \(key.debugDescription)"
            }
        }
        // Re-serialised, every parameter quoted, the value parses to the same challenges.
        let serialised = challenges.map { challenge in
            let parameters = challenge.parameters.sorted { $0.key < $1.key }.map { key, value in
                "\(key)=\(quotedString(value))"
            }
            return parameters.isEmpty ? challenge.scheme : challenge.scheme + " " + parameters.joined(separator: ", ")
        }.joined(separator: ", ")
        let again = AuthenticationChallenge.challenges(in: serialised)
        guard again.count == challenges.count,
            zip(again, challenges).allSatisfy({ $0.scheme == $1.scheme && $0.parameters == $1.parameters })
        else {
            return "\(challenges) re-serialised as \(serialised.debugDescription) parse to \(again)"
        }
        let url = URL(string: "https://127.0.0.1:8443/private")!
        let fields = text.split(separator: "\n").map { ("WWW-Authenticate", String($0)) }
        let response = HTTPResponse(url: url, statusCode: 401, headers: HTTPHeaders(fields))
        guard let space = AuthenticationChallenge.parse(response, url: url) else { return nil }
        guard space.host == "127.0.0.1", space.port == 8443, space.urlScheme == "https" else {
            return "a protection space of another server: \(space)"
        }
        if space.authenticationScheme == .digest {
            let answerable = fields.flatMap { AuthenticationChallenge.challenges(in: $0.1) }.contains {
                $0.scheme.lowercased() == "digest" && AuthenticationChallenge.isAnswerableDigest($0.parameters)
            }
            if !answerable { return "Digest chosen without an answerable Digest challenge" }
        }
        return nil
    }

    /// `text` as an HTTP quoted-string: `"` and `\\` escaped, as Unicode scalars (a quote followed by a combining
    /// mark is one Character with it, and still a quote).
    static func quotedString(_ text: String) -> String {
        var quoted = String.UnicodeScalarView()
        quoted.append("\"")
        for scalar in text.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { quoted.append("\\") }
            quoted.append(scalar)
        }
        quoted.append("\"")
        return String(quoted)
    }

    // MARK: cache-control

    /// The fields of `data`, one `Name: value` a line.
    static func headerFields(_ data: Data) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                name: line[..<colon].trimmingCharacters(in: .whitespaces),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return headers
    }

    /// The DateFormatter the IMF-fixdate fast path stands in for.
    static let imfFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }()

    static func cacheControl(_ data: Data) -> String? {
        let headers = headerFields(data)
        for value in headers.values(for: "Cache-Control") {
            let arguments = CacheControlDirectives(fieldValue: value).arguments
            let serialised = arguments.sorted { $0.key < $1.key }.map { name, argument in
                argument.isEmpty ? name : name + "=" + quotedString(argument)
            }.joined(separator: ", ")
            let again = CacheControlDirectives(fieldValue: serialised).arguments
            if again != arguments {
                return "directives \(arguments) re-serialised as \(serialised.debugDescription) parse to \(again)"
            }
        }
        let directives = CacheControlDirectives(headers)
        for name in Array(directives.arguments.keys) + ["no-store", "no-cache", "max-age"]
        where CacheControlDirectives.contains(name, in: headers) != (directives[name] != nil) {
            return "contains(\(name)) disagrees with the directives \(directives.arguments)"
        }
        let status = [200, 203, 301, 404, 500][data.count % 5]
        let response = HTTPResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: status, headers: headers)
        let storedAt = now
        if let lifetime = ResponseCachePolicy.freshnessLifetime(of: response, storedAt: storedAt),
            lifetime.isNaN || lifetime < 0
        {
            return "a freshness lifetime of \(lifetime)"
        }
        let entry = CachedResponse(response: response, data: Data(), storageDate: storedAt)
        let age = ResponseCachePolicy.currentAge(of: entry, now: storedAt.addingTimeInterval(30))
        if age.isNaN || age < 30 { return "an age of \(age) 30 s after storage" }
        if let ageValue = ResponseCachePolicy.ageValue(headers.values(for: "Age")), ageValue.isNaN || ageValue < 0 {
            return "an Age of \(ageValue)"
        }
        _ = ResponseCachePolicy.isFresh(entry, now: storedAt)
        _ = ResponseCachePolicy.varyingFieldNames(of: response)
        _ = ResponseCachePolicy.confirms(response, stored: response)
        for field in headers {
            if let failure = httpDate(field.value) { return failure }
        }
        return nil
    }

    /// Why the HTTP-date readings of `text` disagree, or `nil`.
    static func httpDate(_ text: String) -> String? {
        if let fast = ResponseCachePolicy.imfFixdate(text), imfFormatter.date(from: text) != fast {
            return "the IMF-fixdate fast path reads \(text.debugDescription) as \(fast), the formatter as "
                + "\(String(describing: imfFormatter.date(from: text)))"
        }
        for date in [ResponseCachePolicy.parseDate(text), RetryAfter.httpDate(text)].compactMap({ $0 }) {
            guard let formatted = imfFixdate(date) else { continue }
            if ResponseCachePolicy.parseDate(formatted) != date || RetryAfter.httpDate(formatted) != date {
                return "the date \(date) read from \(text.debugDescription) reads back from \(formatted) differently"
            }
        }
        return nil
    }

    // MARK: content-range

    static func contentRange(_ data: Data) -> String? {
        let value = String(decoding: data, as: UTF8.self)
        guard let range = ContentRange.parse(value) else { return nil }
        guard ContentRange.start(value) == range.start else {
            return "start \(range.start), but ContentRange.start says \(String(describing: ContentRange.start(value)))"
        }
        guard range.start >= 0, range.start <= range.end, range.end < .max,
            range.completeLength.map({ range.end < $0 }) ?? true
        else {
            return "an impossible range \(range) from \(value.debugDescription)"
        }
        return nil
    }

    // MARK: retry-after

    static func retryAfter(_ data: Data) -> String? {
        let value = String(decoding: data, as: UTF8.self)
        if let seconds = RetryAfter.seconds(value, now: now), seconds.isNaN || seconds < 0 {
            return "a wait of \(seconds) for \(value.debugDescription)"
        }
        return httpDate(value)
    }

    // MARK: stored-head

    static func storedHead(_ data: Data) -> String? {
        guard let head = try? JSONDecoder().decode(StoredHead.self, from: data) else { return nil }
        let entry = head.entry(body: Data("body".utf8))
        guard let encoded = try? JSONEncoder().encode(StoredHead(entry)),
            let again = try? JSONDecoder().decode(StoredHead.self, from: encoded)
        else { return "a decoded head does not encode and decode again: \(entry)" }
        guard again.entry(body: entry.data) == entry else {
            return "a decoded head does not round-trip: \(entry) became \(again.entry(body: entry.data))"
        }
        let now = entry.storageDate.addingTimeInterval(60)
        let age = ResponseCachePolicy.currentAge(of: entry, now: now)
        if age.isNaN || age < 0 { return "an age of \(age)" }
        if let lifetime = ResponseCachePolicy.freshnessLifetime(of: entry.response, storedAt: entry.storageDate),
            lifetime.isNaN || lifetime < 0
        {
            return "a freshness lifetime of \(lifetime)"
        }
        _ = ResponseCachePolicy.isFresh(entry, now: now)
        _ = ResponseCachePolicy.validators(of: entry.response)
        _ = ResponseCachePolicy.varyingFieldNames(of: entry.response)
        return nil
    }

    // MARK: netlink

    static func netlink(_ data: Data) -> String? {
        let bytes = [UInt8](data)
        let all = bytes.withUnsafeBytes { NetlinkDecoder.messages(in: $0) }
        let cut = bytes.count / 2 + Int(bytes.first ?? 0) % (bytes.count / 2 + 1)
        let prefix = bytes[..<min(cut, bytes.count)].withUnsafeBytes { NetlinkDecoder.messages(in: $0) }
        guard prefix.count <= all.count, zip(prefix, all).allSatisfy(==) else {
            return "the first \(cut) bytes decode to \(prefix), not a prefix of \(all)"
        }
        guard all.count <= bytes.count / MemoryLayout<nlmsghdr>.size else {
            return "\(all.count) messages in \(bytes.count) bytes"
        }
        for message in all {
            if case .link(let link) = message.event, link.name.utf8.contains(0) || link.kind?.utf8.contains(0) == true {
                return "a link name or kind with a NUL: \(link)"
            }
        }
        return nil
    }

    // MARK: public-suffix

    static func publicSuffix(_ data: Data) -> String? {
        let list: String
        let names: Data
        if let separator = data.firstIndex(of: 0) {
            list = String(decoding: data[..<separator], as: UTF8.self)
            names = data[data.index(after: separator)...]
        } else {
            list = "com\nco.uk\nuk\njp\n*.kobe.jp\n!city.kobe.jp\ncn\n公司.cn\ngithub.io\n"
            names = data
        }
        let rules = PublicSuffixRules(parsing: list)
        for line in String(decoding: names, as: UTF8.self).split(separator: "\n").prefix(16) {
            let name = String(line)
            if let ascii = IDNA.asciiName(name) {
                guard ascii.utf8.allSatisfy({ $0 < 0x80 }), IDNA.asciiName(ascii) == ascii else {
                    return "IDNA.asciiName(\(name.debugDescription)) is \(ascii.debugDescription): not ASCII, or "
                        + "not its own ASCII form"
                }
            }
            for label in name.split(separator: ".") {
                if let ascii = IDNA.asciiLabel(label), ascii.contains(".") {
                    return "IDNA.asciiLabel(\(label.debugDescription)) has a dot: \(ascii)"
                }
            }
            let isSuffix = rules.isPublicSuffix(name)
            guard let registrable = rules.registrableDomain(for: name) else { continue }
            if isSuffix { return "\(name.debugDescription) is a public suffix with a registrable domain" }
            if rules.isPublicSuffix(registrable) {
                return "the registrable domain \(registrable.debugDescription) of \(name.debugDescription) is a "
                    + "public suffix"
            }
            if rules.registrableDomain(for: registrable) != registrable {
                return "the registrable domain \(registrable.debugDescription) of \(name.debugDescription) has "
                    + "the registrable domain \(String(describing: rules.registrableDomain(for: registrable)))"
            }
            if let asciiHost = IDNA.asciiName(name), let asciiRegistrable = IDNA.asciiName(registrable),
                asciiHost != asciiRegistrable, !asciiHost.hasSuffix("." + asciiRegistrable)
            {
                return "the registrable domain \(registrable.debugDescription) (\(asciiRegistrable)) is not the end "
                    + "of \(name.debugDescription) (\(asciiHost))"
            }
        }
        return nil
    }
}
