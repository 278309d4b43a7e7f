import Foundation
import HeraldTesting
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `openssl s_server -www` on `127.0.0.1` with a throwaway self-signed certificate for `IP:127.0.0.1`: what the
/// TLS options (`--cacert`, `--pin`, `--insecure`) are tried against. It binds port 0 itself and prints
/// `ACCEPT 127.0.0.1:<port>`, which is awaited (with a timeout) as the readiness signal.
///
/// Herald's own TLS tests have a fuller version (a CA and issued certificates) in their test target; a test
/// target of another package can't share it.
final class TLSServer: Sendable {
    let port: Int
    /// The PEM certificate, which is its own CA.
    let certificate: URL
    /// `sha256//<base64>` of the certificate's public key, as `--pin` takes it.
    let pin: String
    private let process: Process
    private let exited: AsyncStream<Void>

    static func start(in directory: URL) async throws -> TLSServer {
        let certificate = directory.appendingPathComponent("server.pem")
        let key = directory.appendingPathComponent("server.key")
        try await openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key.path, "-out",
            certificate.path)
        let publicKey = directory.appendingPathComponent("server.pub.der")
        let digest = directory.appendingPathComponent("server.pub.sha256")
        try await openssl("pkey", "-in", key.path, "-pubout", "-outform", "DER", "-out", publicKey.path)
        try await openssl("dgst", "-sha256", "-binary", "-out", digest.path, publicKey.path)
        let pin = "sha256//" + (try Data(contentsOf: digest)).base64EncodedString()

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "s_server", "-accept", "127.0.0.1:0", "-cert", certificate.path, "-key", key.path, "-www",
        ]
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let (exited, exitedContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingOldest(1))
        let (ports, portsContinuation) = AsyncStream.makeStream(of: Int?.self, bufferingPolicy: .bufferingOldest(1))
        process.terminationHandler = { _ in
            portsContinuation.yield(nil)
            exitedContinuation.yield()
        }
        try process.run()
        let printed = Mutex("")
        PipeReader.start(reading: pipe.fileHandleForReading, name: "openssl-s_server-output") { data in
            let text = printed.withLock { text in
                text += String(decoding: data, as: UTF8.self)
                return text
            }
            for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("ACCEPT ") {
                if let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) {
                    portsContinuation.yield(port)
                }
            }
        }
        let port: Int?
        do {
            port = try await withTimeout(.seconds(30), "openssl s_server did not report its port") {
                for await port in ports { return port }
                return nil
            }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        let server = TLSServer(
            port: port ?? 0, certificate: certificate, pin: pin, process: process, exited: exited, pipe: pipe)
        guard port != nil else {
            try await server.stop()
            throw TimedOut(description: "openssl s_server exited before listening")
        }
        return server
    }

    private let pipe: Pipe

    private init(port: Int, certificate: URL, pin: String, process: Process, exited: AsyncStream<Void>, pipe: Pipe) {
        self.port = port
        self.certificate = certificate
        self.pin = pin
        self.process = process
        self.exited = exited
        self.pipe = pipe
    }

    var url: URL { URL(string: "https://127.0.0.1:\(port)/")! }

    /// SIGKILL (a child started from a dispatch worker thread inherits a mask with SIGTERM blocked), then the exit
    /// awaited through the termination handler.
    func stop() async throws {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try await withTimeout(.seconds(30), "openssl s_server did not exit") { [exited] in
            for await _ in exited { return }
        }
    }

    /// Runs `openssl arguments…` to its exit, failing on a non-zero status.
    private static func openssl(_ arguments: String...) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingOldest(1))
        process.terminationHandler = { continuation.yield($0.terminationStatus) }
        try process.run()
        let status = try await withTimeout(.seconds(30), "openssl \(arguments[0]) did not exit") {
            for await status in exited { return status }
            return -1
        }
        guard status == 0 else { throw TimedOut(description: "openssl \(arguments.joined(separator: " ")) failed") }
    }
}
