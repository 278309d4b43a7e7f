import Foundation
import HeraldTesting
import Herald
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The README's "Adding Herald to your package" blocks are manifest code, which no test target can import
/// (`PackageDescription` exists only inside `swift package`). They are checked here instead: the URL
/// block's version is the library's, its products are the package's libraries, and `swift package
/// dump-package` accepts each block as the dependencies and targets of a real manifest.
@Suite("README install snippet")
struct InstallSnippetTests {
    static let root = SnippetCoverageTests.root

    /// The README's Swift blocks that are manifest code (they name a package dependency), in order.
    static func manifestBlocks() throws -> [[String]] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return SnippetCoverageTests.swiftBlocks(in: readme).filter(SnippetCoverageTests.isManifestCode)
    }

    @Test("the snippet asks for this version and names only library products of this package")
    func versionAndProducts() throws {
        let block = try #require(try Self.manifestBlocks().first).joined(separator: "\n")
        #expect(block.contains("from: \"\(HeraldVersion.string)\""))
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let libraries = Set(Self.captures(of: #"\.library\(name: "([A-Za-z]+)""#, in: manifest))
        let named = Self.captures(of: #"\.product\(name: "([A-Za-z]+)", package: "Herald"\)"#, in: block)
        #expect(libraries == ["Herald", "HeraldNotifications", "HeraldObservers", "HeraldTesting"])
        #expect(!named.isEmpty)
        #expect(
            Set(named).isSubset(of: libraries), "not a library of Package.swift: \(Set(named).subtracting(libraries))")
    }

    @Test("the changelog has a section for this version")
    func changelogSection() throws {
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("\n## [\(HeraldVersion.string)] - "))
    }

    @Test("swift package dump-package accepts the snippet as a manifest's dependencies and targets")
    func manifestCompiles() async throws {
        let block = try #require(try Self.manifestBlocks().first).joined(separator: "\n")
        let (status, dump) = try await Self.dumpPackage(block)
        #expect(status == 0, "swift package dump-package failed:\n\(dump)")
        #expect(dump.contains("\"lowerBound\" : \"\(HeraldVersion.string)\""))
        #expect(dump.contains("\"MyApp\""))
    }

    @Test("the path example: package: is the identity, the last component of the path")
    func pathDependencyIdentity() async throws {
        let block = try #require(
            try Self.manifestBlocks().first { $0.contains { $0.contains(".package(path: \"../Herald\")") } }
        ).joined(separator: "\n")
        #expect(block.contains(".product(name: \"Herald\", package: \"Herald\")"))
        let (status, dump) = try await Self.dumpPackage(block)
        #expect(status == 0, "swift package dump-package failed:\n\(dump)")

        // What the README says of a folder named Herald-main: "Herald" is then no dependency's identity.
        let otherFolder = block.replacingOccurrences(of: "\"../Herald\"", with: "\"../Herald-main\"")
        let (refused, message) = try await Self.dumpPackage(otherFolder)
        #expect(refused != 0)
        #expect(message.contains("unknown package 'Herald' in dependencies of target 'MyApp'"), "\(message)")
        let renamed = otherFolder.replacingOccurrences(of: "package: \"Herald\"", with: "package: \"Herald-main\"")
        let (accepted, output) = try await Self.dumpPackage(renamed)
        #expect(accepted == 0, "swift package dump-package failed:\n\(output)")
    }

    /// Runs `swift package dump-package` on a manifest whose dependencies and targets are `block`; returns
    /// its exit status and what it printed.
    static func dumpPackage(_ block: String) async throws -> (Int32, String) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-install-snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let manifest = """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "MyApp",
            \(block)
            )

            """
        try Data(manifest.utf8).write(to: directory.appendingPathComponent("Package.swift"))

        let output = directory.appendingPathComponent("dump.json")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let outputHandle = try FileHandle(forWritingTo: output)
        defer { try? outputHandle.close() }
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--package-path", directory.path, "dump-package"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputHandle
        process.standardError = outputHandle
        let exited = OneShot<Int32>()
        process.terminationHandler = { exited.send($0.terminationStatus) }
        try process.run()
        let status: Int32
        do {
            status = try await exited.value(timeout: .seconds(120))
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    static func captures(of pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
