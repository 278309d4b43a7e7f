import Foundation
import Testing

/// The shape the sources keep: base classes that let their subclasses say what differs. (A file holds one
/// concept, however long: its length is no rule.)
@Suite("the shape of the sources")
struct SourceShapeTests {
    static func sources() throws -> [(path: String, text: String)] {
        let root = EngineBoundaryTests.sourcesDirectory
        return try EngineBoundaryTests.swiftFiles(under: root).map { file in
            let path = String(file.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count))
            return ("Sources" + path, try String(contentsOf: file, encoding: .utf8))
        }
    }

    /// A type asking whether `self` is one of its subclasses.
    static var selfTypeTest: some RegexComponent { #/\bself\s+(is|as[?!])\s+[A-Z]/# }

    @Test("the detector flags what it should and nothing else")
    func detectors() {
        #expect("if self is DataTask { }".contains(Self.selfTypeTest))
        #expect("let d = self as? DownloadTask".contains(Self.selfTypeTest))
        #expect(!"let isSelf = other is DataTask".contains(Self.selfTypeTest))
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
