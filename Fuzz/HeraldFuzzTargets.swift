// libFuzzer entry point for Herald's parsers of untrusted bytes. Compiled into the Herald module itself by
// Fuzz/run.sh (so internal functions are reachable without @testable, and HeraldEngine's package ones), with
// -sanitize=fuzzer,address.
//
// HERALD_FUZZ_TARGET selects what the input feeds:
//   headers      — response head lines (ResponseHeadLine.parse, as curl's header callback hands them over),
//                  accumulated into HTTPHeaders the way Transfer does, then Content-Disposition file names
//                  (HTTPResponse.suggestedFilename), whose safety invariants are checked.
//   resume-data  — DownloadResumeData.decode; whatever decodes must encode and decode again to itself.
//   json         — JSONParser.parse on a response body; what fails must fail with an offset inside the
//                  input, and whatever parses must survive a round trip through its own JSON text
//                  (JSONEncoder, when the value is within the encoder's own nesting limit) to an equal value.
//   sse          — ServerSentEventParser on an event stream (the first byte sets a chunk size): the same events,
//                  last event ID and reconnection time whether the stream comes whole or in chunks, with the
//                  default size limit and a small one; no dispatched ID holds a NUL, no retry is negative.
//   set-cookie   — SetCookieParser.parse against a few hosts (the first byte picks one): a stored cookie is one a
//                  store may keep (Cookie.malformation nil), its domain matches the host, the prefix rules hold,
//                  and it re-serialises to a field that parses to the same cookie; a cookie date (CookieDate)
//                  re-formatted as an IMF-fixdate parses to the same date.
//   cookie-file  — CookieStore(persistingTo:) on the input as a cookie file: what loads is well formed and loads
//                  again, equal, from the file a save would write.
//   auth-challenge — AuthenticationChallenge.challenges(in:) on a WWW-Authenticate value, and parse on it as a
//                  401's fields: schemes are tokens, parameter names lowercase, the challenges re-serialise to
//                  a value that parses to the same ones; a chosen Digest challenge is one libcurl can answer.
//   cache-control — the input as response header lines (`Name: value`): Cache-Control directives re-serialise to
//                  the same directives and `contains` agrees with them; freshness lifetime, age and Age are
//                  non-negative; an HTTP date re-formatted as an IMF-fixdate parses to the same date, and the
//                  IMF-fixdate fast path agrees with the DateFormatter it stands in for.
//   content-range — ContentRange.parse on a Content-Range value: a parsed range has 0 <= start <= end < length,
//                  and its start is ContentRange.start's.
//   retry-after  — RetryAfter.seconds on a Retry-After value: never negative or NaN; an HTTP date re-formatted
//                  as an IMF-fixdate parses to the same date.
//   stored-head  — DiskResponseCache's stored response head (StoredHead, JSON from the index): whatever decodes
//                  encodes and decodes again to the same entry, and the cache policy's age and freshness of it
//                  are non-negative.
//   netlink      — NetlinkDecoder.messages on a routing-netlink datagram: a truncated datagram decodes to a prefix
//                  of the messages of the whole one; names and kinds hold no NUL.
//   public-suffix — PublicSuffixRules on a list (before the first NUL byte; a small fixed one without one) and
//                  the hosts after it, one a line: IDNA.asciiName is ASCII and idempotent; a registrable domain
//                  is not a public suffix, is its own registrable domain and names the host's last labels.
import CNetlink
import Foundation
import HeraldCookies
import HeraldEngine
import HeraldNetlink

private enum FuzzTarget {
    case headers
    case resumeData
    case json
    case serverSentEvents
    case setCookie
    case cookieFile
    case authenticationChallenge
    case cacheControl
    case contentRange
    case retryAfter
    case storedHead
    case netlink
    case publicSuffix

    static let selected: FuzzTarget = {
        switch ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] {
        case "resume-data": .resumeData
        case "json": .json
        case "sse": .serverSentEvents
        case "set-cookie": .setCookie
        case "cookie-file": .cookieFile
        case "auth-challenge": .authenticationChallenge
        case "cache-control": .cacheControl
        case "content-range": .contentRange
        case "retry-after": .retryAfter
        case "stored-head": .storedHead
        case "netlink": .netlink
        case "public-suffix": .publicSuffix
        default: .headers
        }
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func heraldFuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    switch FuzzTarget.selected {
    case .headers: fuzzHeaders(bytes)
    case .resumeData: fuzzResumeData(bytes)
    case .json: fuzzJSON(bytes)
    case .serverSentEvents: fail(FuzzChecks.serverSentEvents(Data(bytes)))
    case .setCookie: fail(FuzzChecks.setCookie(Data(bytes)))
    case .cookieFile: fail(FuzzChecks.cookieFile(Data(bytes), path: FuzzChecks.cookieFilePath))
    case .authenticationChallenge: fail(FuzzChecks.authenticationChallenge(Data(bytes)))
    case .cacheControl: fail(FuzzChecks.cacheControl(Data(bytes)))
    case .contentRange: fail(FuzzChecks.contentRange(Data(bytes)))
    case .retryAfter: fail(FuzzChecks.retryAfter(Data(bytes)))
    case .storedHead: fail(FuzzChecks.storedHead(Data(bytes)))
    case .netlink: fail(FuzzChecks.netlink(Data(bytes)))
    case .publicSuffix: fail(FuzzChecks.publicSuffix(Data(bytes)))
    }
    return 0
}

private func fuzzHeaders(_ bytes: UnsafeRawBufferPointer) {
    var headers = HTTPHeaders()
    var lineStart = 0
    for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x0A {
        let end = index == bytes.count ? index : index + 1
        let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<end])
        lineStart = end
        switch ResponseHeadLine.parse(line) {
        case .statusLine(_, let statusCode):
            guard (0...999).contains(statusCode) else { fatalError("status code \(statusCode) out of range") }
            headers = HTTPHeaders()
        case .field(let name, let value):
            headers.add(name: name, value: value)
        case .continuation(let more):
            guard headers.count > 0 else { continue }
            var fields = headers.fields
            fields[fields.count - 1].value += " " + more
            headers = HTTPHeaders(fields)
        case .ignored:
            break
        }
    }
    // Whatever the server sent as a file name, it must stay one safe path component.
    let url = URL(string: "http://127.0.0.1/fallback.bin")!
    var response = HTTPResponse(url: url, statusCode: 200, headers: headers)
    response.headers.add(name: "Content-Disposition", value: String(decoding: bytes, as: UTF8.self))
    for name in [
        response.suggestedFilename, HTTPResponse(url: url, statusCode: 200, headers: headers).suggestedFilename,
    ] {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"), !name.contains("\\"), name.utf8.count <= 255,
            !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { fatalError("unsafe suggested file name \(name.debugDescription)") }
    }
    _ = response.mimeType
    _ = response.textEncodingName
    _ = response.expectedContentLength
}

private func fuzzResumeData(_ bytes: UnsafeRawBufferPointer) {
    guard let resume = try? DownloadResumeData.decode(Data(bytes)) else { return }
    guard let encoded = resume.encoded(), let again = try? DownloadResumeData.decode(encoded), again == resume else {
        fatalError("resume data that decodes does not round-trip")
    }
}

private func fuzzJSON(_ bytes: UnsafeRawBufferPointer) {
    let data = Data(bytes)
    let value: JSONValue
    do {
        value = try JSONParser.parse(data)
    } catch {
        guard (0...data.count).contains(error.offset) else {
            fatalError("error offset \(error.offset) outside the input")
        }
        return
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    // JSONEncoder has a nesting limit of its own, below the parser's 512: such values skip the round trip.
    guard let text = try? encoder.encode(value) else { return }
    guard let again = try? JSONParser.parse(text), again == value else {
        fatalError("a parsed value does not round-trip: \(String(decoding: text, as: UTF8.self))")
    }
}

/// Stops the run with `failure`, a broken invariant, when there is one.
private func fail(_ failure: String?) {
    if let failure { fatalError(failure) }
}
