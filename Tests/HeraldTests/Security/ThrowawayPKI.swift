import Foundation

/// A certificate authority made for one test, with server certificates it issues, in a temporary
/// directory that ``remove()`` deletes. Keys are P-256 (fast to generate on a loaded machine).
struct ThrowawayPKI {
    /// A certificate and its private key, PEM files.
    struct Identity {
        let certificate: URL
        let key: URL
        /// `sha256//<base64>` of the key's DER SubjectPublicKeyInfo, computed by openssl.
        let publicKeyPin: String
    }

    let directory: URL
    /// The authority that issues ``issueServerIdentity(named:subjectAltNames:)``'s certificates.
    let authority: Identity

    /// Creates the directory and the authority.
    static func make() async throws -> ThrowawayPKI {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let authority = try await makeAuthority(named: "ca", in: directory)
            return ThrowawayPKI(directory: directory, authority: authority)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A self-signed certificate authority of its own, unrelated to ``authority``.
    func makeUnrelatedAuthority(named name: String) async throws -> Identity {
        try await Self.makeAuthority(named: name, in: directory)
    }

    /// A server certificate issued by ``authority`` for `subjectAltNames` (openssl's SAN syntax), valid from now
    /// for `days` (a negative number: expired that long ago).
    func issueServerIdentity(
        named name: String = "server", subjectAltNames: String = "DNS:localhost,IP:127.0.0.1", days: Int = 2
    ) async throws -> Identity {
        let key = "\(name).key"
        let request = "\(name).csr"
        let certificate = "\(name).pem"
        let extensions = "\(name).ext"
        let text = "subjectAltName=\(subjectAltNames)\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        try Data(text.utf8).write(to: directory.appendingPathComponent(extensions))
        try await OpenSSLTool.run(
            [
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", request, "-subj", "/CN=Herald test server \(name)",
            ], in: directory)
        try await OpenSSLTool.run(
            [
                "x509", "-req", "-in", request, "-CA", authority.certificate.path, "-CAkey", authority.key.path,
                "-CAcreateserial", "-days", String(days), "-extfile", extensions, "-out", certificate,
            ], in: directory)
        return try await Self.identity(certificate: certificate, key: key, in: directory)
    }

    /// A PEM certificate revocation list signed by ``authority`` (or `issuer`), valid from now for two days,
    /// revoking `revoked` (certificates `issuer` issued), written to a file of its own, `name`.
    ///
    /// `openssl ca` keeps the revocations in the directory's database: a later list also names the certificates
    /// earlier calls revoked with the same authority.
    func revocationList(
        named name: String = "crl.pem", revoking revoked: [Identity] = [], issuer: Identity? = nil
    ) async throws -> URL {
        let issuer = issuer ?? authority
        let stem = issuer.certificate.deletingPathExtension().lastPathComponent
        let configuration = "\(stem)-ca.cnf"
        let database = "\(stem)-index.txt"
        let number = "\(stem)-crlnumber"
        if !FileManager.default.fileExists(atPath: directory.appendingPathComponent(database).path) {
            try Data().write(to: directory.appendingPathComponent(database))
            try Data("1000\n".utf8).write(to: directory.appendingPathComponent(number))
            let text = """
                [ca]
                default_ca = throwaway
                [throwaway]
                database = \(database)
                crlnumber = \(number)
                default_md = sha256
                default_crl_days = 2

                """
            try Data(text.utf8).write(to: directory.appendingPathComponent(configuration))
        }
        let signing = ["-config", configuration, "-cert", issuer.certificate.path, "-keyfile", issuer.key.path]
        for identity in revoked {
            try await OpenSSLTool.run(["ca"] + signing + ["-revoke", identity.certificate.path], in: directory)
        }
        try await OpenSSLTool.run(["ca"] + signing + ["-gencrl", "-out", name], in: directory)
        return directory.appendingPathComponent(name)
    }

    /// Deletes the directory and everything in it.
    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func makeAuthority(named name: String, in directory: URL) async throws -> Identity {
        let key = "\(name).key"
        let certificate = "\(name).pem"
        try await OpenSSLTool.run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=Herald throwaway CA \(name)",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: directory)
        return try await identity(certificate: certificate, key: key, in: directory)
    }

    /// The identity with its pin: `openssl pkey -pubout -outform DER | openssl dgst -sha256 -binary | base64`,
    /// in two steps through files (no shell).
    private static func identity(certificate: String, key: String, in directory: URL) async throws -> Identity {
        let publicKey = "\(key).pub.der"
        let digest = "\(key).pub.sha256"
        try await OpenSSLTool.run(["pkey", "-in", key, "-pubout", "-outform", "DER", "-out", publicKey], in: directory)
        try await OpenSSLTool.run(["dgst", "-sha256", "-binary", "-out", digest, publicKey], in: directory)
        let bytes = try Data(contentsOf: directory.appendingPathComponent(digest))
        guard bytes.count == 32 else {
            throw OpenSSLTool.Failure(description: "openssl dgst wrote \(bytes.count) bytes, not a SHA-256 digest")
        }
        return Identity(
            certificate: directory.appendingPathComponent(certificate),
            key: directory.appendingPathComponent(key),
            publicKeyPin: "sha256//" + bytes.base64EncodedString())
    }
}
