import Foundation
import Herald
import HeraldNotifications
import Testing

/// Server trust end to end: a throwaway CA, a server certificate for 127.0.0.1 and `openssl s_server`
/// on loopback, fetched through a session with each kind of ``SecurityPolicy``.
@Suite("SecurityPolicy against a loopback TLS server", .timeLimit(.minutes(3)))
struct SecurityPolicyTLSTests {
    /// A CA, a server identity it issued (for `localhost` and `127.0.0.1`), and a server presenting it.
    struct Scenario {
        let pki: ThrowawayPKI
        let identity: ThrowawayPKI.Identity
        let server: OpenSSLServer
    }

    /// Builds a ``Scenario``, runs `body`, then stops the server and deletes the files.
    func withScenario(
        subjectAltNames: String = "DNS:localhost,IP:127.0.0.1", _ body: (Scenario) async throws -> Void
    ) async throws {
        let pki = try await ThrowawayPKI.make()
        defer { pki.remove() }
        let identity = try await pki.issueServerIdentity(subjectAltNames: subjectAltNames)
        try await withOpenSSLServer(identity: identity, in: pki.directory) { server in
            try await body(Scenario(pki: pki, identity: identity, server: server))
        }
    }

    /// GETs `url` through a new session with `policy`; the session is invalidated afterwards.
    func get(_ url: URL, with policy: SecurityPolicy) async throws -> Result<(Data, HTTPResponse), HeraldError> {
        var configuration = SessionConfiguration()
        configuration.securityPolicy = policy
        configuration.timeoutIntervalForRequest = 30
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        let call = startCall { () async throws(HeraldError) in try await session.data(for: Request(url: url)) }
        return try await outcome(of: call, timeout: .seconds(60))
    }

    /// Expects a 200 with s_server's status page.
    func expectServed(_ result: Result<(Data, HTTPResponse), HeraldError>, by server: OpenSSLServer) {
        switch result {
        case .success(let (body, response)):
            #expect(response.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self).contains("s_server"))
        case .failure(let error):
            Issue.record("expected the page, got \(error); server output: \(server.output)")
        }
    }

    /// Expects the request failed with `code` and the raw `curlCode`, and with `problem` as its
    /// ``HeraldError/serverCertificateProblem``.
    func expectFailure(
        _ result: Result<(Data, HTTPResponse), HeraldError>, _ code: HeraldError.Code, curlCode: Int32,
        problem: ServerCertificateProblem? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch result {
        case .success:
            Issue.record("expected \(code), the request succeeded", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.curlCode == curlCode, "\(error)", sourceLocation: sourceLocation)
            #expect(error.serverCertificateProblem == problem, "\(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - trust

    @Test("the default policy rejects a certificate from an unknown CA with serverCertificateUntrusted, every time")
    func defaultRejectsUnknownAuthority() async throws {
        try await withScenario { scenario in
            // The second connection verifies against the store libcurl kept from the first (see
            // CurlFeatures.cachedSystemBundle): it must trust no more than the first did.
            for _ in 0..<2 {
                let result = try await get(scenario.server.url(), with: .default)
                expectFailure(result, .serverCertificateUntrusted, curlCode: 60, problem: .unknownIssuer)
            }
        }
    }

    @Test("a CA bundle file makes the server trusted, by IP address and by host name")
    func trustsAuthorityFromFile() async throws {
        try await withScenario { scenario in
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            expectServed(try await get(scenario.server.url(), with: policy), by: scenario.server)
            expectServed(try await get(scenario.server.url(host: "localhost"), with: policy), by: scenario.server)
        }
    }

    @Test("a CA bundle in memory (CAINFO_BLOB) makes the server trusted")
    func trustsAuthorityFromData() async throws {
        try await withScenario { scenario in
            let pem = try Data(contentsOf: scenario.pki.authority.certificate)
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemData: pem)
            expectServed(try await get(scenario.server.url(), with: policy), by: scenario.server)
        }
    }

    @Test("custom authorities replace the trusted set: an unrelated CA does not vouch for the server")
    func unrelatedAuthorityIsNotTrusted() async throws {
        try await withScenario { scenario in
            let unrelated = try await scenario.pki.makeUnrelatedAuthority(named: "unrelated")
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: unrelated.certificate)
            expectFailure(
                try await get(scenario.server.url(), with: policy), .serverCertificateUntrusted, curlCode: 60,
                problem: .unknownIssuer)
        }
    }

    @Test("an authority taken out of a trusted file is no longer trusted by the session's next new connection")
    func rotatedFileIsReadAgain() async throws {
        try await withScenario { scenario in
            let trust = scenario.pki.directory.appendingPathComponent("rotated-trust.pem")
            try FileManager.default.copyItem(at: scenario.pki.authority.certificate, to: trust)
            var configuration = SessionConfiguration()
            configuration.securityPolicy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: trust)
            configuration.timeoutIntervalForRequest = 30
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            defer { session.invalidate(cancelingTasks: true) }
            func get(_ url: URL) async throws -> Result<(Data, HTTPResponse), HeraldError> {
                let call = startCall { () async throws(HeraldError) in try await session.data(for: Request(url: url)) }
                return try await outcome(of: call, timeout: .seconds(60))
            }
            expectServed(try await get(scenario.server.url()), by: scenario.server)
            // The file now names another authority only. A second server from the first authority, on a port of its
            // own (no connection nor TLS session to reuse), is refused.
            let unrelated = try await scenario.pki.makeUnrelatedAuthority(named: "replacement")
            try FileManager.default.removeItem(at: trust)
            try FileManager.default.copyItem(at: unrelated.certificate, to: trust)
            let identity = try await scenario.pki.issueServerIdentity(named: "second", subjectAltNames: "IP:127.0.0.1")
            try await withOpenSSLServer(identity: identity, in: scenario.pki.directory) { second in
                expectFailure(
                    try await get(second.url()), .serverCertificateUntrusted, curlCode: 60, problem: .unknownIssuer)
            }
        }
    }

    @Test("the host name is always checked: a trusted certificate for another name is rejected")
    func hostNameIsVerified() async throws {
        try await withScenario(subjectAltNames: "DNS:elsewhere.invalid") { scenario in
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            expectFailure(
                try await get(scenario.server.url(), with: policy), .serverCertificateUntrusted, curlCode: 60,
                problem: .hostNameMismatch)
        }
    }

    @Test("a revocation list: a revoked server certificate is refused as revoked, one it doesn't name is served")
    func revocationList() async throws {
        try await withScenario { scenario in
            let trusted = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            let revoked = try await scenario.pki.issueServerIdentity(named: "revoked", subjectAltNames: "IP:127.0.0.1")
            let list = try await scenario.pki.revocationList(revoking: [revoked])
            let policy = try trusted.checkingRevocation(crlFile: list)
            #expect(policy.revocationListFile == list)
            // The scenario's own certificate is not on the list.
            expectServed(try await get(scenario.server.url(), with: policy), by: scenario.server)
            try await withOpenSSLServer(identity: revoked, in: scenario.pki.directory) { server in
                let result = try await get(server.url(), with: policy)
                expectFailure(result, .serverCertificateUntrusted, curlCode: 60, problem: .revoked)
                if case .failure(let error) = result {
                    #expect(error.message.contains("revoked"), "\(error)")
                    #expect(error.serverCertificateProblem?.description == "revoked")
                }
                // Without the list, the same certificate is trusted: revocation is checked only when asked for.
                expectServed(try await get(server.url(), with: trusted), by: server)
            }
        }
    }

    @Test("a revocation list with nothing from the server's issuer fails as revocationUnknown; a missing file as tls")
    func revocationListWithoutTheIssuer() async throws {
        try await withScenario { scenario in
            let trusted = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            let other = try await scenario.pki.makeUnrelatedAuthority(named: "other-ca")
            let otherList = try await scenario.pki.revocationList(named: "other-crl.pem", issuer: other)
            expectFailure(
                try await get(scenario.server.url(), with: try trusted.checkingRevocation(crlFile: otherList)),
                .serverCertificateUntrusted, curlCode: 60, problem: .revocationUnknown)
            let missing = scenario.pki.directory.appendingPathComponent("no-such-crl.pem")
            expectFailure(
                try await get(scenario.server.url(), with: try trusted.checkingRevocation(crlFile: missing)), .tls,
                curlCode: 82)
        }
    }

    @Test("a list replaced in the file applies to the session's next new connection")
    func revocationListIsReadPerConnection() async throws {
        try await withScenario { scenario in
            let file = scenario.pki.directory.appendingPathComponent("current-crl.pem")
            try FileManager.default.copyItem(at: try await scenario.pki.revocationList(named: "empty.pem"), to: file)
            var configuration = SessionConfiguration()
            configuration.securityPolicy = try SecurityPolicy.trustingCertificateAuthorities(
                pemFile: scenario.pki.authority.certificate
            ).checkingRevocation(crlFile: file)
            // Each request on a connection of its own, so that each is a new handshake.
            configuration.httpAdditionalHeaders = ["Connection": "close"]
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            defer { session.invalidate(cancelingTasks: true) }
            let url = scenario.server.url()
            let first = startCall { () async throws(HeraldError) in try await session.data(for: Request(url: url)) }
            expectServed(try await outcome(of: first, timeout: .seconds(60)), by: scenario.server)
            let revoking = try await scenario.pki.revocationList(named: "revoking.pem", revoking: [scenario.identity])
            try FileManager.default.removeItem(at: file)
            try FileManager.default.copyItem(at: revoking, to: file)
            let second = startCall { () async throws(HeraldError) in try await session.data(for: Request(url: url)) }
            expectFailure(
                try await outcome(of: second, timeout: .seconds(60)), .serverCertificateUntrusted, curlCode: 60,
                problem: .revoked)
        }
    }

    @Test("an expired or self-signed certificate is untrusted, and the error says which")
    func certificateProblemIsNamed() async throws {
        try await withScenario { scenario in
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            let expired = try await scenario.pki.issueServerIdentity(
                named: "expired", subjectAltNames: "IP:127.0.0.1", days: -1)
            try await withOpenSSLServer(identity: expired, in: scenario.pki.directory) { server in
                let result = try await get(server.url(), with: policy)
                expectFailure(result, .serverCertificateUntrusted, curlCode: 60, problem: .expired)
                if case .failure(let error) = result {
                    #expect(error.message.contains("expired"), "\(error)")
                    #expect(error.serverCertificateProblem?.description == "expired")
                }
            }
            let selfSigned = try await scenario.pki.makeUnrelatedAuthority(named: "self-signed")
            try await withOpenSSLServer(identity: selfSigned, in: scenario.pki.directory) { server in
                expectFailure(
                    try await get(server.url(), with: policy), .serverCertificateUntrusted, curlCode: 60,
                    problem: .selfSigned)
            }
        }
    }

    @Test("a TLS transfer's metrics time the handshake: after the connect, before the first byte")
    func handshakeIsTimed() async throws {
        try await withScenario { scenario in
            var configuration = SessionConfiguration()
            configuration.securityPolicy = try SecurityPolicy.trustingCertificateAuthorities(
                pemFile: scenario.pki.authority.certificate)
            configuration.timeoutIntervalForRequest = 30
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            defer { session.invalidate(cancelingTasks: true) }
            // s_server's status page is HTML: taken as it is, not as JSON.
            session.responseSerializer = DataResponseSerializer()
            let completed = OneShot<HeraldError?>()
            let task = try session.dataTask(with: Request(url: scenario.server.url())) { _, _, error in
                completed.send(error)
            }
            task.resume()
            let error = try await completed.value(timeout: .seconds(60))
            #expect(error == nil, "server output: \(scenario.server.output)")
            let metrics = try #require(task.metrics)
            // Cumulative times: the handshake ends after the TCP connect and before the first response byte.
            #expect(metrics.tlsHandshake > metrics.connect, "\(metrics)")
            #expect(metrics.tlsHandshake <= metrics.timeToFirstByte, "\(metrics)")
            #expect(!metrics.connectionReused)
        }
    }

    @Test("a CA file that does not exist fails the request with tls (CURLE_SSL_CACERT_BADFILE)")
    func missingAuthorityFile() async throws {
        try await withScenario { scenario in
            let missing = scenario.pki.directory.appendingPathComponent("no-such-ca.pem")
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: missing)
            expectFailure(try await get(scenario.server.url(), with: policy), .tls, curlCode: 77)
        }
    }

    // MARK: - pinning

    @Test("a pin matching the server's key connects; any pin of the list may match")
    func matchingPinConnects() async throws {
        try await withScenario { scenario in
            let trusted = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
            let pinned = try trusted.pinning(publicKeys: [scenario.identity.publicKeyPin])
            expectServed(try await get(scenario.server.url(), with: pinned), by: scenario.server)

            let backupFirst = try trusted.pinning(
                publicKeys: [scenario.pki.authority.publicKeyPin, scenario.identity.publicKeyPin])
            expectServed(try await get(scenario.server.url(), with: backupFirst), by: scenario.server)
        }
    }

    @Test("a pin that matches no key fails with serverTrustPinMismatch even though the chain is trusted")
    func mismatchedPinFails() async throws {
        try await withScenario { scenario in
            // The CA's own key: real, well-formed, and not the server's.
            let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: scenario.pki.authority.certificate)
                .pinning(publicKeys: [scenario.pki.authority.publicKeyPin])
            expectFailure(try await get(scenario.server.url(), with: policy), .serverTrustPinMismatch, curlCode: 90)
        }
    }

    // MARK: - the opt-out

    @Test("dangerouslyAcceptingInvalidCertificates connects to the untrusted server")
    func dangerousOptInConnects() async throws {
        try await withScenario(subjectAltNames: "DNS:elsewhere.invalid") { scenario in
            let policy = SecurityPolicy.dangerouslyAcceptingInvalidCertificates()
            #expect(policy.allowsInvalidCertificates)
            expectServed(try await get(scenario.server.url(), with: policy), by: scenario.server)
        }
    }

    @Test("pins are still enforced when invalid certificates are accepted")
    func dangerousOptInKeepsPins() async throws {
        try await withScenario { scenario in
            let insecure = SecurityPolicy.dangerouslyAcceptingInvalidCertificates()
            let wrong = try insecure.pinning(publicKeys: [scenario.pki.authority.publicKeyPin])
            expectFailure(try await get(scenario.server.url(), with: wrong), .serverTrustPinMismatch, curlCode: 90)
            let right = try insecure.pinning(publicKeys: [scenario.identity.publicKeyPin])
            expectServed(try await get(scenario.server.url(), with: right), by: scenario.server)
        }
    }
}

extension SecurityPolicyTLSTests {
    @Test("an HTTPS proxy whose certificate is not trusted fails as the proxy's problem, not the server's")
    func untrustedHTTPSProxy() async throws {
        try await withScenario { scenario in
            var configuration = SessionConfiguration()
            configuration.proxy = Proxy(kind: .https, host: "127.0.0.1", port: scenario.server.port)
            configuration.timeoutIntervalForRequest = 30
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            defer { session.invalidate(cancelingTasks: true) }
            // The target is never reached: the handshake with the proxy fails first.
            let target = try #require(URL(string: "http://127.0.0.1:9/"))
            let call = startCall { () async throws(HeraldError) in
                try await session.data(for: Request(url: target))
            }
            let result = try await outcome(of: call, timeout: .seconds(60))
            guard case .failure(let error) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            // Before: serverCertificateUntrusted, with no problem named, which the security policy can't fix.
            #expect(error.code == .proxy, "\(error)")
            #expect(error.curlCode == 60)
            #expect(error.serverCertificateProblem == nil)
            #expect(error.message.contains("HTTPS proxy's certificate is not trusted"), "\(error.message)")
        }
    }
}
