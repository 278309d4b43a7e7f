import Foundation
import Herald
import Testing

/// The snippet of the DocC article "HTTP versions and TLS": a session trusting its own authority, and what
/// a transfer negotiated, against the loopback nginx serving HTTP/2 over TLS.
@Suite("HTTPVersionsAndTLS.md snippets", .timeLimit(.minutes(3)))
struct HTTPVersionsSnippets {
    @Test("a session trusting a private authority reads back its policy, and the response says HTTP/2")
    func checkingASession() async throws {
        try await withNginx { server in
            let caFile = server.pki.authority.certificate
            let url = server.url("/ok/snippet")
            var configuration = SessionConfiguration()
            configuration.httpVersion = .automatic
            configuration.securityPolicy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: caFile)
            let session = SessionManager(configuration: configuration)
            print(session.configuration.securityPolicy.usesSystemCertificateAuthorities)  // false: only caFile's
            let (_, response) = try await session.data(for: Request(url: url))
            print(response.httpVersion)  // "HTTP/2" when the server negotiated it
            #expect(!session.configuration.securityPolicy.usesSystemCertificateAuthorities)
            #expect(response.httpVersion == "HTTP/2")
            await session.invalidateAndWait(cancelingTasks: true)
        }
    }
}
