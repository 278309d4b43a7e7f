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
final class OpenSSLServer {
    let port: Int
    private let process: Process
    private let exited: OneShot<Void>
    private let printed: PrintedText

    private init(port: Int, process: Process, exited: OneShot<Void>, printed: PrintedText) {
        self.port = port
        self.process = process
        self.exited = exited
        self.printed = printed
    }

    /// `https://<host>:<port>/`.
    func url(host: String = "127.0.0.1") -> URL {
        URL(string: "https://\(host):\(port)/")!
    }

    /// What the server printed so far (its accept line and handshake errors), for failure messages.
    var output: String { printed.text }

    /// Starts a server presenting `identity` and waits, up to `timeout`, until it listens.
    ///
    /// s_server prints its `ACCEPT` line after `bind` and `listen`, so the line is the readiness signal:
    /// its output is read as it arrives, and the wait ends at that line, at the process's exit, or at
    /// the timeout — whichever comes first.
    static func start(
        identity: ThrowawayPKI.Identity, in directory: URL, timeout: Duration = .seconds(30)
    ) async throws -> OpenSSLServer {
        let process = Process()
        process.executableURL = try OpenSSLTool.executable()
        process.arguments = [
            "s_server", "-accept", "127.0.0.1:0", "-cert", identity.certificate.path, "-key", identity.key.path,
            "-www",
        ]
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let printed = PrintedText()
        // The port once the ACCEPT line is out, or nil when the process exits first.
        let ready = OneShot<Int?>()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            if let port = acceptedPort(in: printed.append(data)) { ready.send(port) }
        }
        let exited = OneShot<Void>()
        process.terminationHandler = { _ in
            ready.send(nil)
            exited.send(())
        }
        try process.run()

        do {
            guard let port = try await ready.value(timeout: timeout) else {
                throw OpenSSLTool.Failure(description: "openssl s_server exited: \(printed.text)")
            }
            guard acceptsConnection(port: port) else {
                throw OpenSSLTool.Failure(description: "openssl s_server does not accept on \(port): \(printed.text)")
            }
            return OpenSSLServer(port: port, process: process, exited: exited, printed: printed)
        } catch is OneShot<Int?>.TimedOut {
            try? await stop(process, exited: exited)
            throw OpenSSLTool.Failure(
                description: "openssl s_server did not report its port within \(timeout): \(printed.text)")
        } catch {
            try? await stop(process, exited: exited)
            throw error
        }
    }

    /// Kills the server and awaits its exit.
    func stop() async throws {
        try await Self.stop(process, exited: exited)
    }

    /// SIGKILL, not `terminate()`: a child spawned from a libdispatch worker thread inherits that thread's
    /// signal mask, in which SIGTERM is blocked, so s_server would never see it. The exit is awaited
    /// through the termination handler rather than `waitUntilExit()`, which would block one of the
    /// (here two) cooperative threads and can starve the very transfers a test is waiting for.
    private static func stop(_ process: Process, exited: OneShot<Void>) async throws {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try await exited.value(timeout: .seconds(30))
        // Already reaped by Foundation when the handler ran: this returns at once.
        process.waitUntilExit()
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
    let server = try await OpenSSLServer.start(identity: identity, in: directory)
    let result: Result
    do {
        result = try await body(server)
    } catch {
        try? await server.stop()
        throw error
    }
    try await server.stop()
    return result
}

/// Output of the server, appended from the pipe's reader thread and read by the test.
private final class PrintedText: Sendable {
    private let storage = Locked("")

    /// Appends `data` and returns everything printed so far.
    func append(_ data: Data) -> String {
        storage.withLock {
            $0 += String(decoding: data, as: UTF8.self)
            return $0
        }
    }

    var text: String { storage.withLock { $0 } }
}
