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
import Foundation
import HeraldEngine

private enum FuzzTarget {
    case headers
    case resumeData
    case json

    static let selected: FuzzTarget = {
        switch ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] {
        case "resume-data": .resumeData
        case "json": .json
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
