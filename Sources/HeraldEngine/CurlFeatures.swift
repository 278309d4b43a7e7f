import CCurl
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the libcurl Herald was compiled against can do, for code outside the engine that has to decide
/// before any transfer exists. These are facts of the headers (`LIBCURL_VERSION_NUM`), which a
/// distribution ships with the library they describe.
package enum CurlFeatures {
    /// Whether a CA bundle can be handed over in memory (`CURLOPT_CAINFO_BLOB`, libcurl 7.77.0).
    package static let inMemoryCertificateAuthorities = herald_has_cainfo_blob != 0

    /// Whether libcurl says which connection a transfer has before its request is sent
    /// (`CURLOPT_PREREQFUNCTION`, libcurl 7.80.0); before that version a transfer is tied to its connection
    /// at its first response head, and its connection counts as idle while the request goes out.
    package static let reportsConnectionBeforeRequest = herald_has_prereq != 0

    /// The `Accept-Encoding` value libcurl sends for `CURLOPT_ACCEPT_ENCODING` `""`: every content coding the
    /// library at run time can decode, in libcurl's order (`deflate, gzip` with zlib, then `br`, then
    /// `zstd`); `nil` when it can decode none.
    ///
    /// Herald sends it as a header of its own: libcurl 7.88 would format its `Accept-Encoding` line twice,
    /// a byte at a time through its own `printf`, on the loop thread for every request. Decoding stays on
    /// (`CURLOPT_ACCEPT_ENCODING` is still set), and a header the caller set wins as before.
    static let contentEncodings: String? = {
        guard let info = herald_curl_version_info() else { return nil }
        let features = info.pointee.features
        var codings: [String] = []
        if features & CURL_VERSION_LIBZ != 0 { codings += ["deflate", "gzip"] }
        if features & CURL_VERSION_BROTLI != 0 { codings.append("br") }
        if features & CURL_VERSION_ZSTD != 0 { codings.append("zstd") }
        return codings.isEmpty ? nil : codings.joined(separator: ", ")
    }()

    /// The URL schemes the libcurl running speaks (`curl_version_info`'s protocols), lowercased.
    package static let protocols: Set<String> = {
        guard let info = herald_curl_version_info(), var list = info.pointee.protocols else { return [] }
        var names: Set<String> = []
        while let name = list.pointee {
            names.insert(String(cString: name).lowercased())
            list += 1
        }
        return names
    }()

    /// The content codings libcurl decodes, in lower case, with the names it takes for them (`x-gzip` for
    /// `gzip`, `none` for `identity`).
    package static let decodableCodings: Set<String> = {
        var codings: Set<String> = ["identity", "none"]
        for coding in contentEncodings?.split(separator: ",") ?? [] {
            let name = coding.trimmingCharacters(in: .whitespaces)
            codings.insert(name)
            if name == "gzip" { codings.insert("x-gzip") }
        }
        return codings
    }()

    /// Whether turning `CURLOPT_HTTP_CONTENT_DECODING` off at the end of a response head lets that response's
    /// body through undecoded: libcurl before 8.5 reads the option for each piece of body it writes; from 8.5
    /// its writers are set up as it parses the `Content-Encoding` line, before Herald sees the line, and a
    /// coding it can't decode fails the transfer as before (``HeraldError``'s `decoding`).
    static let passesUndecodableBodies: Bool = {
        guard let info = herald_curl_version_info() else { return false }
        return info.pointee.version_num < 0x08_05_00
    }()

    /// Whether libcurl can decode every coding that `Content-Encoding` values name (all of a response's
    /// fields, in order). libcurl fails a transfer whose body has a coding it does not know, where a browser
    /// hands the body over as it came: a caller that sees the coding in the response can still decode it.
    package static func decodesEvery(contentCoding values: [String]) -> Bool {
        codings(in: values).allSatisfy(decodableCodings.contains)
    }

    /// The codings `Content-Encoding` values name (all of a response's fields, in order), trimmed and lowercased;
    /// empty list elements left out.
    package static func codings(in values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }.compactMap { coding in
            let name = coding.trimmingCharacters(in: .whitespaces).lowercased()
            return name.isEmpty ? nil : name
        }
    }

    /// Whether the libcurl running fails every request that reuses a cleartext connection opened with HTTP/2
    /// prior knowledge: 7.88.x sets up a second HTTP/2 layer on the reused connection, and the request ends with
    /// `CURLE_HTTP2` ("Error in the HTTP2 framing layer") before anything is sent. libcurl 8.0.0 fixed it. A TLS
    /// connection is not affected: its protocol is negotiated in the handshake.
    /// Such transfers don't leave their connection for others (``Transfer``'s configuration).
    static let failsPriorKnowledgeReuse: Bool = {
        guard let info = herald_curl_version_info() else { return false }
        let number = info.pointee.version_num
        return number >= 0x07_58_00 && number < 0x08_00_00
    }()

    /// Whether libcurl answers a Digest challenge with `algorithm=SHA-512-256` rightly: before 8.8.0 it sends the
    /// SHA-256 digest under that name, which every server refuses, and a good credential reads as a wrong one.
    package static let answersSHA512_256Digest: Bool = {
        guard let info = herald_curl_version_info() else { return false }
        return info.pointee.version_num >= 0x08_08_00
    }()

    /// Whether the libcurl running is 7.88.1, whose informational text (``GoawayRefusalWatch``) says which
    /// HTTP/2 stream a request went out on and which last stream a server's GOAWAY names. Other versions
    /// word or number these differently (before 7.88 the stream ID is printed in hexadecimal), so the text
    /// is read on this one alone.
    static let reportsGoawayInText: Bool = {
        guard let info = herald_curl_version_info() else { return false }
        return info.pointee.version_num == 0x07_58_01
    }()

    /// Whether libcurl's TLS backend is OpenSSL, whose certificate verification results
    /// (`CURLINFO_SSL_VERIFYRESULT`) are `X509_V_ERR_*` codes.
    package static let usesOpenSSL: Bool = {
        guard let info = herald_curl_version_info(), let backend = info.pointee.ssl_version else { return false }
        return String(cString: backend).hasPrefix("OpenSSL")
    }()

    /// The CA bundle to trust alone for the system's certificate authorities, when libcurl then builds its
    /// certificate store once and keeps it for every later connection; `nil` when it would not.
    ///
    /// libcurl 7.87.0 and later, with OpenSSL, keep the store they built from a CA file for new connections
    /// (`CURLOPT_CA_CACHE_TIMEOUT`, 24 hours by default), but only when no CA directory is set, and Debian's
    /// libcurl sets both by default (`/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`). So every new
    /// TLS connection read the whole bundle again: about 140 certificates, 19–20 ms of CPU with OpenSSL 3.0,
    /// fifteen times a full handshake on loopback. The bundle holds every authority the directory does (the
    /// system's `update-ca-certificates` writes both); when it is a readable file and the store would be kept,
    /// the session trusts it alone.
    package static let cachedSystemBundle: String? = {
        guard let info = herald_curl_version_info(), info.pointee.version_num >= 0x07_57_00,
            let backend = info.pointee.ssl_version, String(cString: backend).hasPrefix("OpenSSL"),
            let easy = curl_easy_init()
        else { return nil }
        defer { curl_easy_cleanup(easy) }
        guard let path = herald_easy_default_cainfo(easy) else { return nil }
        let bundle = String(cString: path)
        var status = stat()
        guard stat(bundle, &status) == 0, status.st_mode & S_IFMT == S_IFREG, access(bundle, R_OK) == 0 else {
            return nil
        }
        // Only the directory the bundle itself is in, as the system's tools keep them (Debian's
        // `/etc/ssl/certs` and its `ca-certificates.crt`): a libcurl built with a directory elsewhere keeps it.
        if let directory = herald_easy_default_capath(easy) {
            let bundleFolder = URL(fileURLWithPath: bundle).deletingLastPathComponent().standardizedFileURL.path
            let folder = URL(fileURLWithPath: String(cString: directory)).standardizedFileURL.path
            guard folder == bundleFolder else { return nil }
        }
        return bundle
    }()

    /// How long a store built from the system's bundle is kept, in seconds: an hour, so that authorities the
    /// system adds or removes (`update-ca-certificates`) count within the hour, for a read of the bundle an hour.
    package static let systemStoreLifetime = 3600

    /// The header line `Accept-Encoding: <contentEncodings>` as a C string, made once.
    static let acceptEncodingHeader: ContiguousArray<CChar>? = contentEncodings.map {
        "Accept-Encoding: \($0)".utf8CString
    }
}
