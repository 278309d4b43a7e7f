import HeraldEngine

/// Why the server's certificate was not trusted: ``HeraldError/serverCertificateProblem`` of a
/// ``HeraldError/Code/serverCertificateUntrusted`` error, when the TLS library said.
///
/// URLSession gives some of these codes of their own (`NSURLErrorServerCertificateHasBadDate`,
/// `…NotYetValid`, `…HasUnknownRoot`); Herald keeps one code, so a check for untrusted servers catches every
/// reason, and says which one here. Read from OpenSSL's verification result (`CURLINFO_SSL_VERIFYRESULT`) and
/// libcurl's own host name check; `nil` with another TLS backend.
public enum ServerCertificateProblem: Hashable, Sendable, CustomStringConvertible {
    /// The certificate, or one in its chain, has expired: often a renewal that didn't happen, or a wrong clock.
    case expired
    /// The certificate, or one in its chain, is not valid yet: usually the client's clock is behind.
    case notYetValid
    /// The chain leads to no certificate authority the session's ``SecurityPolicy`` trusts, or the server sent
    /// it incomplete (no intermediate certificate).
    case unknownIssuer
    /// The certificate is self-signed, or its chain ends in a root the session doesn't trust.
    case selfSigned
    /// The chain is trusted, but the certificate is for other names than the URL's host.
    case hostNameMismatch
    /// The certificate, or one in its chain, is on a revocation list of the session's ``SecurityPolicy``
    /// (``SecurityPolicy/checkingRevocation(crlFile:)``).
    case revoked
    /// The policy checks revocation, but its lists have none usable for a certificate of the chain: no list
    /// from that certificate's issuer, or one that is not yet or no longer valid, or wrongly signed.
    case revocationUnknown
    /// Another verification failure, with OpenSSL's `X509_V_ERR_*` code.
    case other(verifyResult: Int)

    init(_ problem: TransferError.CertificateProblem) {
        switch problem {
        case .expired: self = .expired
        case .notYetValid: self = .notYetValid
        case .unknownIssuer: self = .unknownIssuer
        case .selfSigned: self = .selfSigned
        case .hostNameMismatch: self = .hostNameMismatch
        case .revoked: self = .revoked
        case .revocationUnknown: self = .revocationUnknown
        case .other(let result): self = .other(verifyResult: result)
        }
    }

    /// A stable snake-case name, safe as a log field: `expired`, `not_yet_valid`, `unknown_issuer`,
    /// `self_signed`, `host_name_mismatch`, `revoked`, `revocation_unknown`, or `x509_error_<code>`.
    public var description: String {
        switch self {
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .unknownIssuer: "unknown_issuer"
        case .selfSigned: "self_signed"
        case .hostNameMismatch: "host_name_mismatch"
        case .revoked: "revoked"
        case .revocationUnknown: "revocation_unknown"
        case .other(let result): "x509_error_\(result)"
        }
    }
}
