import Foundation

/// `herald-test-server` — a ``TestServer`` in a child process — for load tests whose connections would
/// not fit in one process's descriptor limit next to the server's own.
///
/// The executable is looked up next to the running program (SwiftPM builds it into the same directory
/// as test bundles and the other products of the package). The child prints its port on its first line
/// and exits when its standard input closes, which ``stop()`` does — and which the system does for it
/// if the parent dies.
public struct TestServerProcess: Sendable {
    /// The port the child's server listens on, on `127.0.0.1`.
    public let port: Int
    // Used only by `stop()`, after `start` returned (both are `Sendable`).
    private let process: SpawnedProcess
    private let input: Pipe

    /// Why the child could not be started.
    public struct StartFailed: Error, CustomStringConvertible {
        /// What went wrong, for a test's failure message.
        public let description: String
    }

    private init(port: Int, process: SpawnedProcess, input: Pipe) {
        self.port = port
        self.process = process
        self.input = input
    }

    /// The `herald-test-server` executable built next to the running program, or `nil` when there is none.
    public static var executable: URL? {
        guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return nil
        }
        let url = URL(fileURLWithPath: program).deletingLastPathComponent()
            .appendingPathComponent("herald-test-server")
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }

    /// Starts the child and waits until it reports its port (it has bound its socket by then).
    ///
    /// - Parameter backlog: The listen backlog to ask for (`--backlog`).
    /// - Throws: ``StartFailed`` when the executable is missing or prints no port; an error that names the
    ///   system's reason when the child can't be started.
    public static func start(backlog: Int = 4096) throws -> TestServerProcess {
        guard let executable else {
            throw StartFailed(description: "herald-test-server is not built next to \(CommandLine.arguments[0])")
        }
        let process = SpawnedProcess()
        process.executableURL = executable
        process.arguments = ["--backlog", String(backlog)]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else {
            process.terminate()
            process.waitUntilExit()
            throw StartFailed(description: "herald-test-server printed no port (got \"\(text)\")")
        }
        return TestServerProcess(port: port, process: process, input: input)
    }

    /// `http://127.0.0.1:<port>` followed by `pathAndQuery` (which starts with `/`), percent-encoded
    /// where it would not otherwise make a URL — as ``TestServer/url(_:)``.
    public func url(_ pathAndQuery: String) -> URL {
        // Safe to force: a decimal port on a literal address is always a valid URL.
        TestServer.url(pathAndQuery, on: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// Closes the child's standard input, which makes it shut down, and waits for it to exit.
    public func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
