import CNetlink
import Foundation
@testable import Herald
import HeraldCookies
@testable import HeraldEngine
import HeraldNetlink
import Testing

/// Replays the fuzz seeds (`Fuzz/Corpus/<target>`) and every input a fuzz run ever crashed on
/// (`Fuzz/Regressions/<target>`, one file per crash, added with the fix) through the same code `make fuzz`
/// drives, so a fixed crash stays fixed in `make test`.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(of target: String) -> [(name: String, data: Data)] {
        var inputs: [(String, Data)] = []
        for folder in ["Corpus", "Regressions"] {
            let directory = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) {
                    inputs.append(("\(folder)/\(name)", data))
                }
            }
        }
        return inputs
    }

    @Test("response-head inputs parse without trapping and give safe file names")
    func headers() {
        let inputs = Self.inputs(of: "headers")
        #expect(!inputs.isEmpty, "no inputs under \(Self.fuzzDirectory.path)")
        for (name, data) in inputs {
            var headers = HTTPHeaders()
            for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
                switch Array(line).withUnsafeBytes({ ResponseHeadLine.parse($0) }) {
                case .statusLine(_, let statusCode):
                    #expect((0...999).contains(statusCode), "\(name)")
                    headers = HTTPHeaders()
                case .field(let field, let value): headers.add(name: field, value: value)
                case .continuation, .ignored: break
                }
            }
            let response = HTTPResponse(
                url: URL(string: "http://127.0.0.1/fallback.bin")!, statusCode: 200,
                headers: ["Content-Disposition": String(decoding: data, as: UTF8.self)])
            let fromHead = HTTPResponse(url: response.url, statusCode: 200, headers: headers)
            for file in [response.suggestedFilename, fromHead.suggestedFilename] {
                #expect(!file.isEmpty && !file.hasPrefix(".") && !file.contains("/") && !file.contains("\\"), "\(name)")
            }
        }
    }

    @Test("resume-data inputs are refused or round-trip")
    func resumeData() throws {
        // The partial files the seeds name, as `make fuzz` creates them.
        try FileManager.default.createDirectory(atPath: "/tmp/herald-fuzz", withIntermediateDirectories: true)
        for seed in ["download-1-seed.part", "download-2-seed.part"] {
            // Atomic: `make fuzz` may be writing the same file at the moment.
            try Data(count: 100).write(to: URL(fileURLWithPath: "/tmp/herald-fuzz/\(seed)"), options: .atomic)
        }
        let inputs = Self.inputs(of: "resume-data")
        #expect(!inputs.isEmpty)
        var decoded = 0
        for (name, data) in inputs {
            guard let resume = try? DownloadResumeData.decode(data) else { continue }
            decoded += 1
            let again = resume.encoded().flatMap { try? DownloadResumeData.decode($0) }
            #expect(again == resume, "\(name)")
        }
        #expect(decoded >= 2, "the valid seeds must decode")
    }

    @Test("JSON inputs fail with an offset inside them or round-trip through their own JSON text")
    func json() throws {
        let inputs = Self.inputs(of: "json")
        #expect(!inputs.isEmpty)
        var parsed = 0
        var refused = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for (name, data) in inputs {
            let value: JSONValue
            do {
                value = try JSONParser.parse(data)
            } catch {
                refused += 1
                #expect((0...data.count).contains(error.offset), "\(name): \(error)")
                continue
            }
            parsed += 1
            // JSONEncoder has a nesting limit of its own, below the parser's 512: such values skip the trip.
            guard let text = try? encoder.encode(value) else { continue }
            #expect(try JSONParser.parse(text) == value, "\(name)")
        }
        // The seeds hold both kinds: valid documents and broken ones.
        #expect(parsed >= 6 && refused >= 5, "parsed \(parsed), refused \(refused)")
        // Nesting: exactly the limit parses, one level more is refused where it starts.
        let deep = try JSONParser.parse(
            Data((String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8))
        #expect(deep != .null)
        #expect(throws: JSONParseError(offset: 512, reason: "nested more than 512 levels deep")) {
            try JSONParser.parse(Data((String(repeating: "[", count: 513) + String(repeating: "]", count: 513)).utf8))
        }
    }

    /// The targets `make fuzz` checks with `FuzzChecks` (below, the same code as the fuzz entry point's).
    static let checkedTargets = [
        "sse", "set-cookie", "cookie-file", "auth-challenge", "cache-control", "content-range", "retry-after",
        "stored-head", "netlink", "public-suffix",
    ]

    @Test("parser inputs keep the invariants their fuzz target checks", arguments: checkedTargets)
    func invariants(of target: String) throws {
        let inputs = Self.inputs(of: target)
        #expect(!inputs.isEmpty, "no inputs for \(target) under \(Self.fuzzDirectory.path)")
        // The cookie file goes in a folder of the test's own, removed after, not in `make fuzz`'s.
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let cookieFile = scratch.url.appendingPathComponent("cookies.jsonl").path
        for (name, data) in inputs {
            #expect(FuzzChecks.check(target, data, cookieFilePath: cookieFile) == nil, "\(target)/\(name)")
        }
    }
}

extension FuzzChecks {
    /// The check of `target`, as `HERALD_FUZZ_TARGET` selects it; the cookie-file target writes its input to
    /// `cookieFilePath`.
    static func check(_ target: String, _ data: Data, cookieFilePath: String) -> String? {
        switch target {
        case "sse": serverSentEvents(data)
        case "set-cookie": setCookie(data)
        case "cookie-file": cookieFile(data, path: cookieFilePath)
        case "auth-challenge": authenticationChallenge(data)
        case "cache-control": cacheControl(data)
        case "content-range": contentRange(data)
        case "retry-after": retryAfter(data)
        case "stored-head": storedHead(data)
        case "netlink": netlink(data)
        case "public-suffix": publicSuffix(data)
        default: "no such target"
        }
    }
}
