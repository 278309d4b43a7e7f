import Foundation
import HeraldEngine

/// How a session decides whether to trust a server's TLS certificate: which certificate authorities it
/// trusts, which public keys it pins, and — only when asked for by name — whether it skips verification.
///
/// Set it on ``SessionConfiguration/securityPolicy``; it applies to every `https` request of the session and
/// to every redirect hop. The ``default`` policy trusts the system's certificate authorities and checks both
/// the certificate chain and the host name, as libcurl does out of the box.
///
/// ```swift
/// let caFile = URL(fileURLWithPath: "/etc/myapp/ca.pem")
/// let pin = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
/// let trusted = try SecurityPolicy.trustingCertificateAuthorities(pemFile: caFile)
/// var configuration = SessionConfiguration()
/// configuration.securityPolicy = try trusted.pinning(publicKeys: [pin])
/// ```
///
/// A server that fails the chain or host-name check fails the task with
/// ``HeraldError/Code/serverCertificateUntrusted``; one whose key matches no pin fails with
/// ``HeraldError/Code/serverTrustPinMismatch``. A policy is checked when it is built: a malformed pin or
/// certificate bundle throws ``HeraldError/Code/invalidSecurityPolicy`` there, before any connection.
///
/// **This replaces AFNetworking's server-trust challenge.** libcurl verifies the chain, the host name and
/// the pins inside the TLS handshake and has no per-certificate callback for Herald to forward to your code
/// (short of OpenSSL-specific hooks), so the decision is declarative: describe what to trust here, and the
/// handshake enforces it. There is no challenge handler to answer, and none that could be forgotten.
public struct SecurityPolicy: Sendable, Hashable {
    /// The PEM file whose certificate authorities are trusted instead of the system's, if any.
    public private(set) var certificateAuthorityFile: URL?
    /// PEM-encoded certificate authorities trusted instead of the system's, if any.
    public private(set) var certificateAuthorityData: Data?
    /// The public keys the server's certificate must match one of; empty means no pinning.
    public private(set) var pinnedPublicKeys: [PublicKeyPin] = []
    /// The PEM file of certificate revocation lists every certificate of the server's chain is checked
    /// against, if any (``checkingRevocation(crlFile:)``).
    public private(set) var revocationListFile: URL?
    /// Whether certificate and host-name verification are switched off.
    ///
    /// - Warning: When `true`, anyone on the network path can impersonate any server. Only
    ///   ``dangerouslyAcceptingInvalidCertificates()`` sets it.
    public private(set) var allowsInvalidCertificates = false

    private init() {}

    /// The system's certificate authorities, with certificate-chain and host-name verification on.
    public static let `default` = SecurityPolicy()

    /// Whether the server's chain is checked against the system's certificate authorities (no custom
    /// file or data was given).
    public var usesSystemCertificateAuthorities: Bool {
        certificateAuthorityFile == nil && certificateAuthorityData == nil
    }

    /// A policy that trusts the certificate authorities in a PEM file **instead of** the system's, with
    /// certificate-chain and host-name verification on (`CURLOPT_CAINFO`).
    ///
    /// Use it for a private PKI or a self-signed server certificate (a self-signed certificate is its own
    /// authority). The system's store is not consulted: to trust it as well, include its bundle (on Debian,
    /// `/etc/ssl/certs/ca-certificates.crt`) in your file. libcurl reads the file for every new connection,
    /// so a rotated bundle is picked up by new connections (keep it to the authorities you need: a bundle of
    /// a hundred certificates costs OpenSSL about 20 ms per connection), and a missing or unreadable file fails
    /// the request with ``HeraldError/Code/tls``. A TLS session resumed from an earlier connection to the same
    /// server was verified then and is not verified again.
    ///
    /// - Parameter pemFile: A local file of one or more PEM certificates (`-----BEGIN CERTIFICATE-----`).
    /// - Returns: The policy.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when `pemFile` is not a
    ///   `file:` URL.
    public static func trustingCertificateAuthorities(pemFile: URL) throws(HeraldError) -> SecurityPolicy {
        guard pemFile.isFileURL, !pemFile.path.isEmpty, !pemFile.path.contains("\0") else {
            throw invalid("The certificate authority file must be a local file URL.")
        }
        var policy = SecurityPolicy()
        policy.certificateAuthorityFile = pemFile
        return policy
    }

    /// A policy that trusts the PEM certificate authorities in `pemData` **instead of** the system's, with
    /// certificate-chain and host-name verification on (`CURLOPT_CAINFO_BLOB`).
    ///
    /// As ``trustingCertificateAuthorities(pemFile:)``, for certificates you hold in memory (bundled in
    /// the binary, fetched from a secret store). There is no form taking a file and data together: libcurl
    /// uses only one of `CAINFO` and `CAINFO_BLOB`, so concatenate the PEM text instead.
    ///
    /// - Parameter pemData: One or more PEM certificates.
    /// - Returns: The policy.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when `pemData` holds no
    ///   PEM certificate or a damaged one (a block whose base64 is not one DER certificate, a block without
    ///   its END line), or when Herald was built against a libcurl older than 7.77.0, which has no
    ///   `CURLOPT_CAINFO_BLOB` (write the certificates to a file and use
    ///   ``trustingCertificateAuthorities(pemFile:)`` there).
    public static func trustingCertificateAuthorities(pemData: Data) throws(HeraldError) -> SecurityPolicy {
        guard CurlFeatures.inMemoryCertificateAuthorities else {
            throw invalid(
                "Certificate authorities in memory need libcurl 7.77 or later (this is \(LibraryVersions.curl)); "
                    + "use trustingCertificateAuthorities(pemFile:).")
        }
        guard pemData.range(of: Data("-----BEGIN CERTIFICATE-----".utf8)) != nil else {
            throw invalid("The certificate authority data holds no PEM certificate.")
        }
        // libcurl refuses the whole bundle for one damaged block, at every request: refused here instead.
        if let fault = Self.damagedCertificate(in: pemData) { throw invalid(fault) }
        var policy = SecurityPolicy()
        policy.certificateAuthorityData = pemData
        return policy
    }

    /// What is wrong with the first damaged `CERTIFICATE` block of `pem`, or `nil` when each is whole: its
    /// base64 decodes to one DER `SEQUENCE` exactly (the outer shape of a certificate; OpenSSL checks the rest).
    static func damagedCertificate(in pem: Data) -> String? {
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        var rest = Substring(String(decoding: pem, as: UTF8.self))
        var index = 0
        while let start = rest.range(of: begin) {
            index += 1
            guard let stop = rest[start.upperBound...].range(of: end) else {
                return "Certificate \(index) of the certificate authority data has no END line."
            }
            var block = rest[start.upperBound..<stop.lowerBound]
            // RFC 1421 header lines (`Proc-Type: …`, `Comment: …`) end at a blank line before the base64.
            if block.contains(":"), let blank = block.range(of: "\n\n") ?? block.range(of: "\r\n\r\n") {
                block = block[blank.upperBound...]
            }
            let text = block.filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(text)), Self.isOneSequence(der) else {
                return "Certificate \(index) of the certificate authority data is damaged (not one DER certificate)."
            }
            rest = rest[stop.upperBound...]
        }
        return nil
    }

    /// Whether `der` is one DER `SEQUENCE` and nothing after it.
    private static func isOneSequence(_ der: Data) -> Bool {
        let bytes = [UInt8](der)
        guard bytes.count >= 2, bytes[0] == 0x30 else { return false }
        if bytes[1] < 0x80 { return bytes.count == 2 + Int(bytes[1]) }
        let lengthBytes = Int(bytes[1] & 0x7F)
        guard (1...4).contains(lengthBytes), bytes.count >= 2 + lengthBytes else { return false }
        let length = bytes[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | Int($1) }
        return bytes.count == 2 + lengthBytes + length
    }

    /// A policy that accepts **any** certificate: expired, self-signed, issued by anyone, for any host.
    ///
    /// It turns off libcurl's `CURLOPT_SSL_VERIFYPEER` and `CURLOPT_SSL_VERIFYHOST`. The connection is still
    /// encrypted, but to whoever answered: anyone on the network path can read and change the traffic.
    /// It exists for throwaway test servers. For a server with a self-signed certificate, prefer
    /// ``trustingCertificateAuthorities(pemFile:)`` with that certificate, or add
    /// ``pinning(publicKeys:)-([PublicKeyPin])`` to this policy: pins are still enforced when verification is off.
    ///
    /// - Warning: Never ship this in production code. It is AFNetworking's `allowInvalidCertificates` and
    ///   `validatesDomainName = NO` together, and carries the same risk.
    /// - Returns: The policy.
    public static func dangerouslyAcceptingInvalidCertificates() -> SecurityPolicy {
        var policy = SecurityPolicy()
        policy.allowsInvalidCertificates = true
        return policy
    }

    /// This policy, additionally refusing a server whose certificate, or any certificate of its chain, is
    /// revoked by a certificate revocation list (CRL) in `crlFile` (`CURLOPT_CRLFILE`).
    ///
    /// Revocation is not checked otherwise: Herald fetches no CRL and asks no OCSP responder. Keep the file
    /// current yourself (from your authority's CRL distribution point); it is read for every new connection,
    /// so a replaced file applies to the next one, and a missing or unreadable file fails the request with
    /// ``HeraldError/Code/tls``. OpenSSL checks **every** certificate of the chain below the trusted root: the
    /// file needs a current list from each issuing authority (for a server certificate issued straight by a
    /// root, the root's list). A revoked certificate fails the task with
    /// ``HeraldError/Code/serverCertificateUntrusted`` and the problem ``ServerCertificateProblem/revoked``; a
    /// chain with no usable list for one of its certificates (none from its issuer, or one past its next
    /// update) with ``ServerCertificateProblem/revocationUnknown`` — a missing list is a failure, not a pass.
    ///
    /// So that every new connection is checked against the current lists, none resumes an earlier TLS session
    /// (a resumed session is not verified again), and the certificate authorities are read afresh for each:
    /// with the system's authorities, over a hundred certificates, that costs a new connection about 20 ms of
    /// CPU with OpenSSL 3.0 (a file of your own authorities, far less). Kept-alive connections pay nothing.
    /// Replaces any list file the policy already had.
    ///
    /// - Parameter crlFile: A local file of one or more PEM lists (`-----BEGIN X509 CRL-----`).
    /// - Returns: The policy checking revocation.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when `crlFile` is not a local
    ///   file URL, or when this policy accepts invalid certificates (nothing would be checked).
    public func checkingRevocation(crlFile: URL) throws(HeraldError) -> SecurityPolicy {
        guard crlFile.isFileURL, !crlFile.path.isEmpty, !crlFile.path.contains("\0") else {
            throw Self.invalid("The certificate revocation list file must be a local file URL.")
        }
        guard !allowsInvalidCertificates else {
            throw Self.invalid(
                "A policy accepting invalid certificates verifies nothing, so it can't check revocation either.")
        }
        var policy = self
        policy.revocationListFile = crlFile
        return policy
    }

    /// This policy, additionally requiring the server's public key to match one of `publicKeys`.
    ///
    /// libcurl (`CURLOPT_PINNEDPUBLICKEY`) compares the SHA-256 digest of the **server's own certificate's**
    /// public key (its DER `SubjectPublicKeyInfo`) with the pins, after the chain and host-name checks;
    /// intermediate and root keys are not matched. List the current key and a backup key so a key rotation
    /// does not lock clients out. Replaces any pins the policy already had.
    ///
    /// - Parameter publicKeys: The accepted keys; at least one.
    /// - Returns: The policy with the pins.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when `publicKeys` is empty.
    public func pinning(publicKeys: [PublicKeyPin]) throws(HeraldError) -> SecurityPolicy {
        guard !publicKeys.isEmpty else {
            throw Self.invalid("Pinning needs at least one public key; an empty list would pin nothing.")
        }
        var policy = self
        policy.pinnedPublicKeys = publicKeys
        return policy
    }

    /// This policy, additionally requiring the server's public key to match one of the `sha256//<base64>`
    /// pins in `publicKeys` — the format of curl's `--pinnedpubkey`, HPKP and most pinning guides.
    ///
    /// Compute a pin from a key or certificate with:
    ///
    /// ```sh
    /// openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform DER \
    ///     | openssl dgst -sha256 -binary | base64
    /// ```
    ///
    /// and prefix it with `sha256//`. See ``pinning(publicKeys:)-([PublicKeyPin])`` for what is compared.
    ///
    /// - Parameter publicKeys: The accepted keys as `sha256//<base64>` strings; at least one.
    /// - Returns: The policy with the pins.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when the list is empty or a
    ///   pin is malformed (see ``PublicKeyPin/init(_:)``).
    public func pinning(publicKeys: [String]) throws(HeraldError) -> SecurityPolicy {
        var pins: [PublicKeyPin] = []
        for text in publicKeys { pins.append(try PublicKeyPin(text)) }
        return try pinning(publicKeys: pins)
    }

    static func invalid(_ message: String) -> HeraldError {
        HeraldError(.invalidSecurityPolicy, message)
    }
}
