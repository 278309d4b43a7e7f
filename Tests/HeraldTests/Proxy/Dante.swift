import Foundation
import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `danted` (dante-server), a SOCKS5 proxy, on a loopback port in the foreground with a generated
/// configuration; its log (stderr) is read as it arrives.
///
/// danted forks worker processes into its process group (Foundation's `Process` makes the child a group
/// leader), and stopping it kills the whole group. Prefer ``withDante(_:)``, which always stops it.
final class Dante: Sendable {
    let port: Int
    private let process: Process
    private let exited: OneShot<Void>
    private let log: ProcessOutput
    private let directory: URL

    private init(port: Int, process: Process, exited: OneShot<Void>, log: ProcessOutput, directory: URL) {
        self.port = port
        self.process = process
        self.exited = exited
        self.log = log
        self.directory = directory
    }

    /// Everything danted logged so far.
    var output: String { log.text }

    /// Starts danted on `127.0.0.1` without authentication and waits, up to `timeout`, until it runs.
    static func start(timeout: Duration = .seconds(20)) async throws -> Dante {
        let executable = "/usr/sbin/danted"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw Tinyproxy.Failure(description: "danted is not installed; run `make deps`")
        }
        var lastOutput = ""
        for _ in 0..<3 {
            let port = try Tinyproxy.freeLoopbackPort()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-danted-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let config = """
                logoutput: stderr
                internal: 127.0.0.1 port = \(port)
                external: 127.0.0.1
                socksmethod: none
                clientmethod: none
                user.privileged: root
                user.unprivileged: root
                client pass {
                    from: 127.0.0.0/8 to: 0.0.0.0/0
                    log: connect disconnect error
                }
                socks pass {
                    from: 127.0.0.0/8 to: 0.0.0.0/0
                    log: connect disconnect error
                }

                """
            let configFile = directory.appendingPathComponent("danted.conf")
            try Data(config.utf8).write(to: configFile)

            let process = Process()
            // Foundation starts the child as the leader of a process group of its own: its pid is the
            // group id of every worker it forks.
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["-f", configFile.path, "-N", "1"]
            process.standardInput = FileHandle.nullDevice
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            let log = ProcessOutput()
            let exited = OneShot<Void>()
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                guard !data.isEmpty else {
                    handle.readabilityHandler = nil
                    return
                }
                log.append(data)
            }
            process.terminationHandler = { _ in
                log.finish()
                exited.send(())
            }
            try process.run()
            let dante = Dante(port: port, process: process, exited: exited, log: log, directory: directory)
            do {
                try await log.wait(for: " running", timeout: timeout)
                return dante
            } catch {
                lastOutput = log.text
                try? await dante.stop()
            }
        }
        throw Tinyproxy.Failure(description: "danted did not start: \(lastOutput)")
    }

    /// Waits until danted has logged a line containing `text`.
    func waitForLog(containing text: String, timeout: Duration = .seconds(20)) async throws {
        try await log.wait(for: text, timeout: timeout)
    }

    /// Kills danted's whole process group, awaits the main process's exit, removes the configuration.
    func stop() async throws {
        // The group id is the main process's pid; the group outlives it only until this kill.
        kill(-process.processIdentifier, SIGKILL)
        try await exited.value(timeout: .seconds(30))
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a running ``Dante`` and stops it afterwards, whether `body` returns or throws.
func withDante<Result>(_ body: (Dante) async throws -> Result) async throws -> Result {
    let dante = try await Dante.start()
    let result: Result
    do {
        result = try await body(dante)
    } catch {
        try? await dante.stop()
        throw error
    }
    try await dante.stop()
    return result
}
