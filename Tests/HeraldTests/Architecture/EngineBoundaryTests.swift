import Foundation
import Testing
@testable import HeraldEngine

/// libcurl and libuv stay behind `Sources/HeraldEngine/`: no other source file of the package imports
/// `CCurl` or `CUV` or names one of their symbols in code. Comments may still name a libcurl option when
/// they document what a public setting maps to.
// Serialized: its regular expressions compile their programs lazily, on first use, and two tests matching
// with them at once on two threads have crashed the test process (the heap damaged, a later copy faulting).
@Suite("the engine boundary", .serialized)
struct EngineBoundaryTests {
    /// The package's `Sources/`, found from this file: `Tests/HeraldTests/Architecture/<this file>`.
    static let sourcesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources", isDirectory: true)

    static let engineDirectory = sourcesDirectory.appendingPathComponent("HeraldEngine", isDirectory: true)

    /// libcurl's and libuv's vocabulary, and the C shims' own functions.
    static var vocabulary: some RegexComponent {
        #/\bimport\s+(CCurl|CUV)\b|\bCURL[A-Za-z0-9_]*|\bcurl_[a-z_]+|\buv_[a-z_]+|\bherald_[a-z_]+\s*\(/#
    }

    /// The code of a Swift source file with `//` and `/* */` comments blanked out.
    static func code(of source: String) -> String {
        source.replacing(#/(?s)\/\*.*?\*\//#, with: "").replacing(#/\/\/[^\n]*/#, with: "")
    }

    /// What every match of ``vocabulary`` contains: a text without any of these has nothing to look at.
    static let vocabularyMarks = ["CCurl", "CUV", "CURL", "curl_", "uv_", "herald_"]

    /// Whether `text` contains a mark of ``vocabularyMarks``.
    static func mayUseVocabulary(_ text: some StringProtocol) -> Bool {
        vocabularyMarks.contains { text.contains($0) }
    }

    /// Each line of `source`'s code that uses libcurl or libuv, as "line: text". The regular expressions run
    /// only where a mark is (they are slow in a debug build, and a synchronous test holds a thread of the
    /// small pool every test shares).
    static func violations(in source: String) -> [String] {
        guard mayUseVocabulary(source) else { return [] }
        return code(of: source).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .filter { mayUseVocabulary($0.element) && $0.element.contains(vocabulary) }
            .map { "\($0.offset + 1): \($0.element.trimmingCharacters(in: .whitespaces))" }
    }

    /// Every `.swift` file under `directory`.
    static func swiftFiles(under directory: URL) -> [URL] {
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        return (enumerator?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
    }

    @Test("the detector flags C vocabulary in code and ignores it in comments")
    func detectorFlagsCodeOnly() {
        let source = """
            import CCurl
            /// Maps to `CURLOPT_TIMEOUT`.
            let a = CURL_HTTP_VERSION_1_1 // CURLE_OK
            let b = curl_easy_strerror(code)
            /* uv_run in a block comment */
            uv_async_send(handle)
            herald_easy_setopt_long(easy, option, 1)
            let c = "no C here"
            """
        #expect(
            Self.violations(in: source) == [
                "1: import CCurl",
                "3: let a = CURL_HTTP_VERSION_1_1",
                "4: let b = curl_easy_strerror(code)",
                "6: uv_async_send(handle)",
                "7: herald_easy_setopt_long(easy, option, 1)",
            ])
    }

    @Test("no source file outside the HeraldEngine target uses libcurl or libuv")
    func onlyTheEngineTouchesC() throws {
        let enginePath = Self.engineDirectory.standardizedFileURL.path + "/"
        let files = Self.swiftFiles(under: Self.sourcesDirectory)
        let outside = files.filter { !$0.standardizedFileURL.path.hasPrefix(enginePath) }
        // Both sides are non-empty, so the scan below looked at real files.
        #expect(outside.count > 100)
        #expect(files.count > outside.count)
        var found: [String] = []
        for file in outside {
            let source = try String(contentsOf: file, encoding: .utf8)
            let relative = file.standardizedFileURL.path.dropFirst(Self.sourcesDirectory.standardizedFileURL.path.count)
            found += Self.violations(in: source).map { "Sources\(relative):\($0)" }
        }
        #expect(found == [], "libcurl/libuv vocabulary belongs in Sources/HeraldEngine/ only")
    }

    @Test("the HeraldEngine target is where the C vocabulary is")
    func theEngineUsesC() throws {
        let engineFiles = Self.swiftFiles(under: Self.engineDirectory)
        let users = try engineFiles.filter { !Self.violations(in: try String(contentsOf: $0, encoding: .utf8)).isEmpty }
        #expect(users.contains { $0.lastPathComponent == "TransferError+Curl.swift" })
        #expect(users.contains { $0.lastPathComponent == "ProtocolVersion+Curl.swift" })
        #expect(users.contains { $0.lastPathComponent == "MultiHandle.swift" })
    }
}
