import Foundation
import Testing

/// The shape the sources keep: small files, and base classes that let their subclasses say what differs.
@Suite("the shape of the sources")
struct SourceShapeTests {
    /// The most lines a source file has, unless its header says why it needs more.
    static let lineLimit = 300

    /// The phrase a longer file's header uses to give its reason.
    static let reasonPhrase = "Longer than 300 lines because"

    static func sources() throws -> [(path: String, text: String)] {
        let root = EngineBoundaryTests.sourcesDirectory
        return try EngineBoundaryTests.swiftFiles(under: root).map { file in
            let path = String(file.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count))
            return ("Sources" + path, try String(contentsOf: file, encoding: .utf8))
        }
    }

    /// Files over the limit whose first 20 lines give no reason.
    static func oversized(_ files: [(path: String, text: String)]) -> [String] {
        files.compactMap { file in
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count > lineLimit else { return nil }
            let header = lines.prefix(20).joined(separator: "\n")
            return header.contains(reasonPhrase) ? nil : "\(file.path): \(lines.count) lines"
        }
    }

    /// A type asking whether `self` is one of its subclasses.
    static var selfTypeTest: some RegexComponent { #/\bself\s+(is|as[?!])\s+[A-Z]/# }

    @Test("the detectors flag what they should and nothing else")
    func detectors() {
        let long = (0..<(Self.lineLimit + 1)).map { "let a\($0) = \($0)" }.joined(separator: "\n")
        let explained = "// \(Self.reasonPhrase) it is a table.\n" + long
        #expect(
            Self.oversized([("long.swift", long), ("explained.swift", explained), ("short.swift", "let a = 1")])
                == ["long.swift: \(Self.lineLimit + 1) lines"])
        #expect("if self is DataTask { }".contains(Self.selfTypeTest))
        #expect("let d = self as? DownloadTask".contains(Self.selfTypeTest))
        #expect(!"let isSelf = other is DataTask".contains(Self.selfTypeTest))
    }

    @Test("no source file is over 300 lines without a reason in its header")
    func smallFiles() throws {
        let files = try Self.sources()
        #expect(files.count > 100)
        #expect(Self.oversized(files) == [])
    }

    @Test("no type tests whether it is one of its subclasses")
    func noSelfTypeTests() throws {
        let found = try Self.sources().flatMap { file in
            EngineBoundaryTests.code(of: file.text).split(separator: "\n").enumerated()
                .filter { $0.element.contains(Self.selfTypeTest) }
                .map { "\(file.path):\($0.offset + 1): \($0.element.trimmingCharacters(in: .whitespaces))" }
        }
        #expect(found == [], "let the subclass say what differs (an overridden property or method)")
    }
}
