import Foundation
import Testing

/// The `custom-observer` sample's own checks of what it is given.
@Suite("custom-observer: arguments")
struct CustomObserverSampleTests {
    /// Runs `custom-observer arguments…` (built beside this test bundle) and returns its exit status and stderr.
    private func run(_ arguments: [String]) async throws -> (status: Int32, stderr: String) {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binary = try #require(
            [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("custom-observer") }
                .first { FileManager.default.isExecutableFile(atPath: $0.path) },
            "build the samples first: swift build --build-tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        var statuses = exited.stream.makeAsyncIterator()
        let status = try #require(await statuses.next())
        return (status, stderr)
    }

    @Test("a URL the session can't use (no scheme, another scheme) is a usage error, exit 64, not a crash")
    func unusableURL() async throws {
        for url in ["example.com", "ftp://127.0.0.1/x", "http://"] {
            let result = try await run([url])
            #expect(result.status == 64, "\(url): \(result.stderr)")
            #expect(result.stderr.hasPrefix("usage: custom-observer"), "\(url): \(result.stderr)")
        }
    }
}
