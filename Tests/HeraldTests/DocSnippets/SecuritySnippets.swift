import Foundation
import Herald
import Testing

/// The `SecurityPolicy` block of `Docs/MigratingFromAFNetworking.md`, run against `openssl s_server`
/// with a throwaway CA (the docs show a file path and a pin that the test fills in).
@Suite("Docs/MigratingFromAFNetworking.md security snippet", .timeLimit(.minutes(3)))
struct SecuritySnippets {
    @Test("a session trusting a CA file and pinning the server's key fetches from it")
    func pinnedManager() async throws {
        let pki = try await ThrowawayPKI.make()
        defer { pki.remove() }
        let identity = try await pki.issueServerIdentity()
        try await withOpenSSLServer(identity: identity, in: pki.directory) { server in
            // doc-line: let caFile = URL(fileURLWithPath: "/etc/myapp/ca.pem")
            let caFile = pki.authority.certificate
            // doc-line: let pin = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
            let pin = identity.publicKeyPin
            let trusted = try SecurityPolicy.trustingCertificateAuthorities(pemFile: caFile)
            var configuration = SessionConfiguration()
            configuration.securityPolicy = try trusted.pinning(publicKeys: [pin])
            let pinnedManager = SessionManager(configuration: configuration)

            defer { pinnedManager.invalidate(cancelingTasks: true) }
            let url = server.url()
            let call = startCall { () async throws(HeraldError) in
                try await pinnedManager.data(for: Request(url: url))
            }
            let (_, response) = try await outcome(of: call, timeout: .seconds(60)).get()
            #expect(response.statusCode == 200)
        }
    }
}
