import Foundation

// The session settings a transfer applies to its easy handle, in the engine's terms. `Herald` makes them from
// its public types (`ProtocolVersion`, `TrustSettings`, `Proxy`, `Credential`), which the engine doesn't name.

/// The HTTP version a transfer asks for.
package enum ProtocolVersion: Sendable, Hashable {
    /// HTTP/2 over TLS when the server offers it, HTTP/1.1 otherwise.
    case automatic
    /// HTTP/1.1 only.
    case http1_1
    /// HTTP/2, upgrading a cleartext connection.
    case http2
    /// HTTP/2 from the first byte, without an upgrade.
    case http2PriorKnowledge
}

/// Which servers' certificates a transfer trusts.
package struct TrustSettings: Sendable, Hashable {
    /// Whether any certificate is accepted, unverified.
    package var allowsInvalidCertificates = false
    /// A PEM file of the certificate authorities to trust instead of the system's.
    package var certificateAuthorityFile: URL?
    /// PEM data of the certificate authorities to trust instead of the system's.
    package var certificateAuthorityData: Data?
    /// Public key pins in libcurl's `sha256//<base64>` form; any one of them must match.
    package var pinnedPublicKeys: [String] = []
    /// A PEM file of certificate revocation lists checked for every certificate of the server's chain.
    package var revocationListFile: URL?

    /// Whether the system's certificate authorities are trusted (no authorities of the caller's).
    package var usesSystemCertificateAuthorities: Bool {
        certificateAuthorityFile == nil && certificateAuthorityData == nil
    }

    /// The system's authorities, verified, unpinned.
    package static let system = TrustSettings()

    /// Creates settings; the defaults are ``system``'s.
    package init(
        allowsInvalidCertificates: Bool = false, certificateAuthorityFile: URL? = nil,
        certificateAuthorityData: Data? = nil, pinnedPublicKeys: [String] = [], revocationListFile: URL? = nil
    ) {
        self.allowsInvalidCertificates = allowsInvalidCertificates
        self.certificateAuthorityFile = certificateAuthorityFile
        self.certificateAuthorityData = certificateAuthorityData
        self.pinnedPublicKeys = pinnedPublicKeys
        self.revocationListFile = revocationListFile
    }
}

/// A proxy every transfer of a session goes through.
package struct ProxySettings: Sendable, Hashable {
    /// The proxy as libcurl takes it: `scheme://host:port`.
    package var url: String
    /// Hosts reached directly.
    package var excludedHosts: [String] {
        didSet { noProxy = NoProxyRules(excludedHosts) }
    }
    /// ``excludedHosts`` read once, for every transfer's host.
    package private(set) var noProxy: NoProxyRules
    /// The proxy's credential, if it asks for one.
    package var user: String?
    /// The credential's password.
    package var password: String?
    /// Whether the proxy speaks HTTP (an `http` or `https` proxy), so its credential answers with Basic.
    package var speaksHTTP: Bool

    /// Creates settings.
    package init(url: String, excludedHosts: [String], user: String?, password: String?, speaksHTTP: Bool) {
        self.url = url
        self.excludedHosts = excludedHosts
        self.noProxy = NoProxyRules(excludedHosts)
        self.user = user
        self.password = password
        self.speaksHTTP = speaksHTTP
    }
}

/// A credential for one transfer and the scheme libcurl answers the server's challenge with.
package struct TransferCredential: Sendable, Hashable {
    /// The user name.
    package var user: String
    /// The password.
    package var password: String
    /// Whether libcurl answers with Digest (otherwise Basic).
    package var usesDigest: Bool

    /// Creates a credential.
    package init(user: String, password: String, usesDigest: Bool) {
        self.user = user
        self.password = password
        self.usesDigest = usesDigest
    }
}
