import Foundation
import Herald
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#endif

/// `openssl s_server -www` on a loopback port: answers `GET /` over TLS with an HTML status page.
///
/// It binds `127.0.0.1:0` itself and prints the port it got (`ACCEPT 127.0.0.1:<port>`), so there is no
/// window in which another process could take a port picked for it. ``start(identity:in:timeout:)``
/// returns once the port accepts a TCP connection; ``stop()`` kills the process and awaits its exit.
/// Prefer ``withOpenSSLServer(identity:in:_:)``, which always stops it.
final class OpenSSLServer: StoppableServer {
    let port: Int
    private let daemon: LoopbackDaemon

    private init(port: Int, daemon: LoopbackDaemon) {
        self.port = port
        self.daemon = daemon
    }

    /// `https://<host>:<port>/`.
    func url(host: String = "127.0.0.1") -> URL {
        URL(string: "https://\(host):\(port)/")!
    }

    /// What the server printed so far (its accept line and handshake errors), for failure messages.
    var output: String { daemon.output }

    /// Starts a server presenting `identity` and waits, up to `timeout`, until it listens.
    ///
    /// s_server prints its `ACCEPT` line after `bind` and `listen`, so the line is the readiness signal:
    /// its output is read as it arrives, and the wait ends at that line, at the process's exit, or at
    /// the timeout — whichever comes first.
    static func start(
        identity: ThrowawayPKI.Identity, in directory: URL, timeout: Duration = .seconds(30)
    ) async throws -> OpenSSLServer {
        // The port once the ACCEPT line is out, or nil when the process exits first.
        let ready = OneShot<Int?>()
        let daemon = try LoopbackDaemon(
            executable: try OpenSSLTool.executable(),
            arguments: [
                "s_server", "-accept", "127.0.0.1:0", "-cert", identity.certificate.path, "-key",
                identity.key.path, "-www",
            ],
            onOutput: { text in if let port = acceptedPort(in: text) { ready.send(port) } },
            onExit: { ready.send(nil) })
        do {
            guard let port = try await ready.value(timeout: timeout) else {
                throw OpenSSLTool.Failure(description: "openssl s_server exited: \(daemon.output)")
            }
            guard acceptsConnection(port: port) else {
                throw OpenSSLTool.Failure(description: "openssl s_server does not accept on \(port): \(daemon.output)")
            }
            return OpenSSLServer(port: port, daemon: daemon)
        } catch is OneShot<Int?>.TimedOut {
            try? await daemon.stop()
            throw OpenSSLTool.Failure(
                description: "openssl s_server did not report its port within \(timeout): \(daemon.output)")
        } catch {
            try? await daemon.stop()
            throw error
        }
    }

    /// Kills the server and awaits its exit.
    func stop() async throws {
        try await daemon.stop()
    }

    /// The port in s_server's `ACCEPT 127.0.0.1:<port>` line, once it has printed it.
    private static func acceptedPort(in output: String) -> Int? {
        for line in output.split(whereSeparator: \.isNewline) where line.hasPrefix("ACCEPT ") {
            if let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) {
                return port
            }
        }
        return nil
    }

    /// Whether a TCP connection to `127.0.0.1:port` succeeds (closed right away; s_server logs a failed
    /// handshake and accepts the next connection).
    private static func acceptsConnection(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}

/// Runs `body` with a running ``OpenSSLServer`` and stops it afterwards, whether `body` returns or throws.
func withOpenSSLServer<Result>(
    identity: ThrowawayPKI.Identity, in directory: URL, _ body: (OpenSSLServer) async throws -> Result
) async throws -> Result {
    try await withRunning(try await OpenSSLServer.start(identity: identity, in: directory), body)
}
