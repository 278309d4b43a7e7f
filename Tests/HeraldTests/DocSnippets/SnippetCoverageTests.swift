import Foundation
import Testing

/// Keeps the documentation honest: every ```swift block in the README, in `Docs/` and in the DocC
/// catalogs must appear, line for line, in code that the test targets or the samples compile.
///
/// The other files of this folder hold the snippets as real code, most of them run against a
/// `TestServer`. A block matches when each of its paragraphs (lines between blank lines), trimmed and
/// without `import` lines, is a contiguous run of the lines of one compiled file, trimmed the same way. A compiled line can stand for a
/// different line in the docs with a trailing `// doc-line: …` comment — used where the docs show a
/// real URL and the test uses the loopback server.
@Suite("Documentation snippets")
struct SnippetCoverageTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Markdown whose Swift blocks must compile.
    static func documents() throws -> [URL] {
        var documents = [root.appendingPathComponent("README.md")]
        documents += try markdown(under: "Docs")
        for module in ["Herald", "HeraldNotifications", "HeraldObservers", "HeraldTesting"] {
            documents += try markdown(under: "Sources/\(module)/\(module).docc")
        }
        return documents
    }

    /// Swift sources that the package compiles and in which snippets may live.
    static func compiledSources() throws -> [URL] {
        var sources: [URL] = []
        for folder in ["Tests/HeraldTests/DocSnippets", "Tests/HeraldObserversTests/DocSnippets", "Samples"] {
            sources += try files(under: folder, withExtension: "swift")
        }
        return sources
    }

    @Test("every Swift block in the README, Docs/ and the DocC catalogs is compiled code")
    func everySnippetCompiles() throws {
        let compiled = try Self.compiledSources().map {
            try Self.compiledLines(of: String(contentsOf: $0, encoding: .utf8))
        }
        var missing: [String] = []
        var checked = 0
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            for block in Self.swiftBlocks(in: text) {
                checked += 1
                // Manifest code can't be compiled by a test target: InstallSnippetTests checks it.
                if Self.isManifestCode(block) { continue }
                let paragraphs = Self.paragraphs(of: block)
                guard let first = paragraphs.first?.first else { continue }
                let found = compiled.contains { file in paragraphs.allSatisfy { Self.contains(file, run: $0) } }
                if !found {
                    let path = document.path.replacingOccurrences(of: Self.root.path + "/", with: "")
                    missing.append("\(path): block starting \"\(first)\"")
                }
            }
        }
        #expect(checked > 10, "expected to find the documentation's Swift blocks under \(Self.root.path)")
        #expect(missing.isEmpty, "Swift blocks not found in compiled code:\n\(missing.joined(separator: "\n"))")
    }

    // MARK: - helpers

    static func markdown(under folder: String) throws -> [URL] {
        try files(under: folder, withExtension: "md")
    }

    static func files(under folder: String, withExtension pathExtension: String) throws -> [URL] {
        let directory = root.appendingPathComponent(folder)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        // Hidden folders skipped: Samples/.build holds the samples package's build and its dependencies' sources.
        let enumerator = FileManager.default.enumerator(
            at: directory, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
        var found: [URL] = []
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == pathExtension { found.append(url) }
        }
        return found.sorted { $0.path < $1.path }
    }

    /// Whether a block is `Package.swift` code (it names a package dependency, by URL or by path), which
    /// needs `PackageDescription` and so is checked by ``InstallSnippetTests`` instead.
    static func isManifestCode(_ block: [String]) -> Bool {
        block.contains { $0.contains(".package(url:") || $0.contains(".package(path:") }
    }

    /// The contents of each block fenced with ```swift.
    static func swiftBlocks(in markdown: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if current != nil, trimmed == "```" {
                blocks.append(current!)
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    /// A block's paragraphs (runs of lines between blank lines), normalized. Each must appear in the same
    /// file, so a block may show declarations and the statements that use them together, as a program
    /// would, while the test keeps the declarations at file scope and the statements in a function.
    static func paragraphs(of block: [String]) -> [[String]] {
        var paragraphs: [[String]] = [[]]
        for line in block {
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                paragraphs.append([])
            } else {
                paragraphs[paragraphs.count - 1].append(line)
            }
        }
        return paragraphs.map(normalized).filter { !$0.isEmpty }
    }

    /// Lines trimmed, with runs of spaces collapsed, without blank and `import` lines.
    static func normalized(_ lines: [String]) -> [String] {
        lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("import ") }
    }

    /// A source file's lines as the docs would show them: a `// doc-line: X` comment line stands for
    /// `X` in place of the line after it.
    static func compiledLines(of source: String) -> [String] {
        var lines: [String] = []
        var replacement: String?
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("// doc-line: ") {
                replacement = String(trimmed.dropFirst("// doc-line: ".count))
            } else if let text = replacement {
                lines.append(text)
                replacement = nil
            } else {
                lines.append(String(line))
            }
        }
        return normalized(lines)
    }

    static func contains(_ haystack: [String], run needle: [String]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<start + needle.count]) == needle { return true }
        }
        return false
    }
}
