import Foundation
import HeraldTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the `openssl` command-line tool, awaiting its exit with a deadline.
///
/// The TLS tests need certificates and a TLS server without building swift-nio-ssl; the `openssl` CLI
/// (installed by `make deps`) provides both.
enum OpenSSLTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The `openssl` executable on `PATH`.
    static func executable() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("openssl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw Failure(description: "the openssl command-line tool is not on PATH; `make deps` installs it")
    }

    /// Runs `openssl arguments…` in `directory`; throws with its output when it fails or overruns `timeout`.
    static func run(_ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)) async throws {
        let process = SpawnedProcess()
        process.executableURL = try executable()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        // Output goes to a file, not a pipe: nothing has to drain it while the process runs.
        let log = directory.appendingPathComponent("openssl-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        defer { try? logHandle.close() }
        process.standardOutput = logHandle
        process.standardError = logHandle

        let exited = OneShot<Int32>()
        process.terminationHandler = { exited.send($0.terminationStatus) }
        try process.run()
        let status: Int32
        do {
            status = try await exited.value(timeout: timeout)
        } catch {
            // SIGKILL: SIGTERM may be blocked in the child (see OpenSSLServer.stop).
            kill(process.processIdentifier, SIGKILL)
            throw Failure(description: "openssl \(arguments.first ?? "") did not finish within \(timeout)")
        }
        guard status == 0 else {
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) exited \(status): \(output)")
        }
    }
}
