import Foundation
import Herald
import Testing

/// What a ``SecurityPolicy`` refuses when it is built — before any session or connection exists.
@Suite("SecurityPolicy validation")
struct SecurityPolicyValidationTests {
    static let validPin = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

    /// Runs `build` and expects it to throw ``HeraldError/Code/invalidSecurityPolicy``.
    func expectInvalid(
        _ build: () throws(HeraldError) -> Any, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do throws(HeraldError) {
            let built = try build()
            Issue.record("expected invalidSecurityPolicy, built \(built)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .invalidSecurityPolicy, "\(error)", sourceLocation: sourceLocation)
            #expect(error.curlCode == nil, sourceLocation: sourceLocation)
        }
    }

    @Test(
        "a malformed pin throws invalidSecurityPolicy",
        arguments: [
            "",
            "sha256//",
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",  // no prefix
            "sha1//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
            "SHA256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
            "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",  // unpadded
            "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= ",  // trailing space
            "sha256//not base64 at all!",
            "sha256//AAAA",  // 3 bytes
            "sha256//" + Data(count: 48).base64EncodedString(),  // a SHA-384 length
            "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
            "/etc/ssl/server.pub",  // curl would read a file; Herald takes digests only
        ])
    func malformedPin(pin: String) {
        expectInvalid { () throws(HeraldError) in try PublicKeyPin(pin) }
        expectInvalid { () throws(HeraldError) in try SecurityPolicy.default.pinning(publicKeys: [Self.validPin, pin]) }
    }

    @Test("an empty pin list throws instead of silently pinning nothing")
    func emptyPins() {
        expectInvalid { () throws(HeraldError) in try SecurityPolicy.default.pinning(publicKeys: [String]()) }
        expectInvalid { () throws(HeraldError) in try SecurityPolicy.default.pinning(publicKeys: [PublicKeyPin]()) }
    }

    @Test("a digest that is not 32 bytes throws")
    func digestLength() {
        expectInvalid { () throws(HeraldError) in try PublicKeyPin(sha256Digest: Data(count: 31)) }
        expectInvalid { () throws(HeraldError) in try PublicKeyPin(sha256Digest: Data()) }
    }

    @Test("a valid pin keeps its digest and prints in curl's canonical form")
    func validPin() throws {
        let pin = try PublicKeyPin(Self.validPin)
        #expect(pin.sha256Digest.count == 32)
        #expect(pin.description == Self.validPin)
        #expect(try PublicKeyPin(sha256Digest: pin.sha256Digest) == pin)
        let policy = try SecurityPolicy.default.pinning(publicKeys: [Self.validPin])
        #expect(policy.pinnedPublicKeys == [pin])
        #expect(policy.usesSystemCertificateAuthorities)
        #expect(!policy.allowsInvalidCertificates)
    }

    @Test("revocation lists need a local file URL, and a policy that verifies certificates")
    func revocationListValidation() throws {
        expectInvalid { () throws(HeraldError) in
            try SecurityPolicy.default.checkingRevocation(crlFile: URL(string: "https://127.0.0.1/crl.pem")!)
        }
        expectInvalid { () throws(HeraldError) in
            try SecurityPolicy.dangerouslyAcceptingInvalidCertificates().checkingRevocation(
                crlFile: URL(fileURLWithPath: "/tmp/crl.pem"))
        }
        let file = URL(fileURLWithPath: "/tmp/crl.pem")
        let policy = try SecurityPolicy.default.checkingRevocation(crlFile: file)
        #expect(policy.revocationListFile == file)
        #expect(policy.usesSystemCertificateAuthorities)
        #expect(SecurityPolicy.default.revocationListFile == nil)
        #expect(policy != SecurityPolicy.default)
    }

    @Test("custom certificate authorities need a file URL or PEM data holding a certificate")
    func certificateAuthorityInput() throws {
        expectInvalid { () throws(HeraldError) in
            try SecurityPolicy.trustingCertificateAuthorities(pemFile: URL(string: "https://example.com/ca.pem")!)
        }
        expectInvalid { () throws(HeraldError) in
            try SecurityPolicy.trustingCertificateAuthorities(pemData: Data("not a certificate".utf8))
        }
        expectInvalid { () throws(HeraldError) in
            try SecurityPolicy.trustingCertificateAuthorities(pemData: Data())
        }
        let file = URL(fileURLWithPath: "/etc/herald/ca.pem")
        let policy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: file)
        #expect(policy.certificateAuthorityFile == file)
        #expect(!policy.usesSystemCertificateAuthorities)
    }

    @Test(
        "PEM data with a damaged certificate block is refused when the policy is built; whole ones in any layout pass")
    func damagedPEMData() async throws {
        let pki = try await ThrowawayPKI.make()
        defer { pki.remove() }
        let pem = try String(contentsOf: pki.authority.certificate, encoding: .utf8)
        let lines = pem.split(separator: "\n")
        // RFC 1421 header lines before the base64, which OpenSSL reads past.
        let withHeaders = pem.replacingOccurrences(
            of: "-----BEGIN CERTIFICATE-----\n", with: "-----BEGIN CERTIFICATE-----\nComment: our CA\n\n")
        for good in [pem, pem.replacingOccurrences(of: "\n", with: "\r\n"), "comment\n" + pem + pem, withHeaders] {
            #expect(throws: Never.self) { try SecurityPolicy.trustingCertificateAuthorities(pemData: Data(good.utf8)) }
        }
        // The same certificate cut short, its END line gone, or its base64 decoding to something else.
        let truncated = lines.prefix(lines.count - 3).joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
        let unterminated = lines.dropLast().joined(separator: "\n") + "\n"
        let other = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n"
        for bad in [pem + truncated, pem + unterminated, other + pem] {
            expectInvalid { () throws(HeraldError) in
                try SecurityPolicy.trustingCertificateAuthorities(pemData: Data(bad.utf8))
            }
        }
    }

    @Test("the default configuration verifies against the system's authorities")
    func defaults() {
        let policy = SessionConfiguration().securityPolicy
        #expect(policy == .default)
        #expect(policy.usesSystemCertificateAuthorities)
        #expect(policy.pinnedPublicKeys.isEmpty)
        #expect(!policy.allowsInvalidCertificates)
        #expect(SecurityPolicy.dangerouslyAcceptingInvalidCertificates() != .default)
    }
}
