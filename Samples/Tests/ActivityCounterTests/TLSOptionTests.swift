import Foundation
import Testing

/// `--cacert`, `--pin` and `--insecure` against a loopback TLS server with a self-signed certificate.
@Suite("activity-counter: TLS options", .serialized)
struct TLSOptionTests {
    @Test("untrusted by default (exit 3); --cacert trusts it; a wrong --pin fails (exit 3), the right one passes")
    func certificateAuthorityAndPins() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await TLSServer.start(in: scratch.url)
        let url = server.url.absoluteString
        let wrongPin = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        let untrusted = try await ActivityCounterProcess.run(["fetch", url])
        let trusted = try await ActivityCounterProcess.run(["fetch", url, "--cacert", server.certificate.path])
        let pinned = try await ActivityCounterProcess.run([
            "fetch", url, "--cacert", server.certificate.path, "--pin", server.pin,
        ])
        let mispinned = try await ActivityCounterProcess.run([
            "fetch", url, "--cacert", server.certificate.path, "--pin", wrongPin,
        ])
        let insecure = try await ActivityCounterProcess.run(["fetch", url, "--insecure"])
        let insecureMispinned = try await ActivityCounterProcess.run(["fetch", url, "--insecure", "--pin", wrongPin])
        try await server.stop()

        #expect(untrusted.status == 3, "\(untrusted.stdout) \(untrusted.stderr)")
        #expect(untrusted.stdout.contains("server certificate not trusted"))
        #expect(trusted.status == 0, "\(trusted.stdout) \(trusted.stderr)")
        #expect(pinned.status == 0, "\(pinned.stdout) \(pinned.stderr)")
        #expect(mispinned.status == 3)
        #expect(mispinned.stdout.contains("server key does not match --pin"))
        #expect(insecure.status == 0)
        #expect(insecure.stderr.contains("TLS certificates are NOT verified"))
        // Pins still apply with --insecure.
        #expect(insecureMispinned.status == 3)
    }

    @Test("an HTTPS proxy named by the environment whose certificate is untrusted fails as the proxy, not the server")
    func untrustedEnvironmentProxy() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // The TLS server plays the proxy: its self-signed certificate is in no trust store.
        let server = try await TLSServer.start(in: scratch.url)
        let port = try #require(server.url.port)
        let run = try await ActivityCounterProcess.run(
            ["fetch", "http://127.0.0.1:9/"], environment: ["http_proxy": "https://127.0.0.1:\(port)"])
        try await server.stop()
        // Before, only a session's own proxy was recognised: this read as the server's certificate, which no
        // --cacert of the server's can fix.
        #expect(run.stdout.contains("proxy failed"), "\(run.stdout) \(run.stderr)")
        #expect(!run.stdout.contains("server certificate not trusted"))
    }
}
