import Foundation
import Herald

/// Debian's `danted` (dante-server), a SOCKS5 proxy, on a loopback port in the foreground with a generated
/// configuration; its log (stderr) is read as it arrives.
///
/// danted forks worker processes into its process group (Foundation's `Process` makes the child a group
/// leader), and stopping it kills the whole group. Prefer ``withDante(_:)``, which always stops it.
enum Dante {
    /// Starts danted on `127.0.0.1` without authentication and waits, up to `timeout`, until it runs.
    static func start(timeout: Duration = .seconds(20)) async throws -> ListeningDaemon {
        let executable = "/usr/sbin/danted"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LoopbackDaemon.Failure(description: "danted is not installed; run `make deps`")
        }
        return try await LoopbackDaemon.start("danted", readyText: " running", timeout: timeout) {
            port, directory in
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
            return try LoopbackDaemon(
                executable: URL(fileURLWithPath: executable), arguments: ["-f", configFile.path, "-N", "1"],
                killsProcessGroup: true, directory: directory)
        }
    }
}

/// Runs `body` with danted running (see ``Dante``) and stops it afterwards, whether `body` returns or throws.
func withDante<Result>(_ body: (ListeningDaemon) async throws -> Result) async throws -> Result {
    try await withRunning(try await Dante.start(), body)
}
