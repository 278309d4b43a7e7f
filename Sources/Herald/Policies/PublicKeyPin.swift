import Foundation

/// One pinned server public key: the SHA-256 digest of its DER `SubjectPublicKeyInfo`, the `sha256//` pin
/// format of libcurl's `CURLOPT_PINNEDPUBLICKEY`.
///
/// Pins are validated when they are made, so a typo fails at configuration time with
/// ``HeraldError/Code/invalidSecurityPolicy`` instead of failing every connection with
/// ``HeraldError/Code/serverTrustPinMismatch``. Use them with ``SecurityPolicy/pinning(publicKeys:)-([PublicKeyPin])``.
public struct PublicKeyPin: Sendable, Hashable {
    /// The 32-byte SHA-256 digest of the public key.
    public let sha256Digest: Data

    /// A pin from its text form, `sha256//` followed by the base64 digest (44 characters).
    ///
    /// - Parameter pin: For example `"sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="`.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` when the prefix is missing
    ///   (only SHA-256 pins are supported), the rest is not padded base64, or it does not decode to 32 bytes.
    public init(_ pin: String) throws(HeraldError) {
        let prefix = "sha256//"
        // The message quotes a bounded prefix of the input: it is a public-key digest, not a secret, and
        // seeing it is what makes a typo findable.
        let shown = pin.count > 60 ? "\(pin.prefix(60))…" : pin
        guard pin.hasPrefix(prefix) else {
            throw SecurityPolicy.invalid("The pin \"\(shown)\" does not start with \"sha256//\".")
        }
        guard let digest = Data(base64Encoded: String(pin.dropFirst(prefix.count))) else {
            throw SecurityPolicy.invalid("The pin \"\(shown)\" is not valid base64 after \"sha256//\".")
        }
        try self.init(sha256Digest: digest)
    }

    /// A pin from the raw digest.
    ///
    /// - Parameter sha256Digest: The SHA-256 digest of the key's DER `SubjectPublicKeyInfo`.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidSecurityPolicy`` unless it is 32 bytes long.
    public init(sha256Digest: Data) throws(HeraldError) {
        guard sha256Digest.count == 32 else {
            throw SecurityPolicy.invalid(
                "A SHA-256 pin is 32 bytes; this one is \(sha256Digest.count).")
        }
        self.sha256Digest = sha256Digest
    }
}

extension PublicKeyPin: CustomStringConvertible {
    /// The pin in canonical text form, `sha256//<base64>`, as libcurl matches it.
    public var description: String { "sha256//" + sha256Digest.base64EncodedString() }
}
