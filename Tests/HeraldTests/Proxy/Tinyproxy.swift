import Foundation
import Herald

/// Debian's `tinyproxy` on a loopback port, in the foreground, with a generated configuration; its log
/// (written to stdout) is read as it arrives, so a test can await the line that shows its request.
///
/// Prefer ``withTinyproxy(credential:_:)``, which always stops it.
final class Tinyproxy: Sendable, StoppableServer {
    let port: Int
    private let daemon: LoopbackDaemon

    private init(port: Int, daemon: LoopbackDaemon) {
        self.port = port
        self.daemon = daemon
    }

    /// Everything tinyproxy logged so far.
    var output: String { daemon.output }

    /// The executable `make deps` installs.
    static func executable() throws -> URL {
        for path in ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw LoopbackDaemon.Failure(description: "tinyproxy is not installed; run `make deps`")
    }

    /// Starts tinyproxy listening on `127.0.0.1` and waits, up to `timeout`, for its main loop.
    /// - Parameter credential: When given, the proxy demands it (`BasicAuth`).
    static func start(credential: Credential? = nil, timeout: Duration = .seconds(20)) async throws -> Tinyproxy {
        let executable = try executable()
        let (port, daemon) = try await LoopbackDaemon.start(
            "tinyproxy", readyText: "Accepting connections", timeout: timeout
        ) { port, directory in
            var config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                LogLevel Info
                MaxClients 20
                Allow 127.0.0.1

                """
            if let credential { config += "BasicAuth \(credential.user) \(credential.password)\n" }
            let configFile = directory.appendingPathComponent("tinyproxy.conf")
            try Data(config.utf8).write(to: configFile)
            return try LoopbackDaemon(
                executable: executable, arguments: ["-d", "-c", configFile.path], directory: directory)
        }
        return Tinyproxy(port: port, daemon: daemon)
    }

    /// Waits until tinyproxy has logged a line containing `text`.
    func waitForLog(containing text: String, timeout: Duration = .seconds(20)) async throws {
        try await daemon.waitForLog(containing: text, timeout: timeout)
    }

    /// Kills tinyproxy, awaits its exit and removes its configuration.
    func stop() async throws {
        try await daemon.stop()
    }
}

/// Runs `body` with a running ``Tinyproxy`` and stops it afterwards, whether `body` returns or throws.
func withTinyproxy<Result>(
    credential: Credential? = nil, _ body: (Tinyproxy) async throws -> Result
) async throws -> Result {
    try await withRunning(try await Tinyproxy.start(credential: credential), body)
}
