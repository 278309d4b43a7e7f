import Foundation
import Herald

/// Debian's `tinyproxy` on a loopback port, in the foreground, with a generated configuration; its log
/// (written to stdout) is read as it arrives, so a test can await the line that shows its request.
///
/// Prefer ``withTinyproxy(credential:_:)``, which always stops it.
enum Tinyproxy {
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
    static func start(credential: Credential? = nil, timeout: Duration = .seconds(20)) async throws -> ListeningDaemon {
        let executable = try executable()
        return try await LoopbackDaemon.start(
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
    }
}

/// Runs `body` with tinyproxy running (see ``Tinyproxy``) and stops it afterwards, whether `body` returns or throws.
func withTinyproxy<Result>(
    credential: Credential? = nil, _ body: (ListeningDaemon) async throws -> Result
) async throws -> Result {
    try await withRunning(try await Tinyproxy.start(credential: credential), body)
}
