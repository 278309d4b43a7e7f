import CCurl
import Foundation

// The session's TrustSettings, applied to each easy handle. libcurl checks everything inside the TLS
// handshake; a failure ends the transfer with CURLE_PEER_FAILED_VERIFICATION (60) or
// CURLE_SSL_PINNEDPUBKEYNOTMATCH (90), which TransferError+Curl.swift maps to their own codes.
extension Transfer {
    /// Sets verification, trusted certificate authorities and pins from the request's policy. Loop thread.
    func configureSecurity(_ easy: UnsafeMutableRawPointer, check: (String, CURLcode) -> Void) {
        let policy = request.trust
        // curl's defaults, set explicitly so the policy, not a default, says what is verified.
        let verifies = !policy.allowsInvalidCertificates
        check("SSL_VERIFYPEER", herald_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, verifies ? 1 : 0))
        check("SSL_VERIFYHOST", herald_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, verifies ? 2 : 0))

        if policy.usesSystemCertificateAuthorities {
            // The system's bundle alone, without libcurl's CA directory, so that libcurl keeps the store it
            // builds for the next connections instead of reading the bundle for each (see CurlFeatures).
            if CurlFeatures.cachedSystemBundle != nil {
                check("CAPATH", herald_easy_setopt_string(easy, CURLOPT_CAPATH, nil))
                check(
                    "CA_CACHE_TIMEOUT",
                    herald_easy_setopt_ca_cache_timeout(easy, CurlFeatures.systemStoreLifetime))
            }
        } else {
            // Custom authorities replace the system's. libcurl starts with its build's defaults (Debian:
            // CAINFO /etc/ssl/certs/ca-certificates.crt and CAPATH /etc/ssl/certs); a CAPATH left set would
            // go on trusting the system's store, so it is cleared (NULL), and so is CAINFO for a blob.
            check("CAPATH", herald_easy_setopt_string(easy, CURLOPT_CAPATH, nil))
            if let file = policy.certificateAuthorityFile {
                check("CAINFO", herald_easy_setopt_string(easy, CURLOPT_CAINFO, file.path))
                // libcurl 7.87+ would keep the store it built from the file for 24 hours (keyed by its path
                // alone): an authority taken out of the file would go on being trusted. Read for each new
                // connection's full handshake, as the policy promises (a resumed TLS session is not verified
                // again). Older libcurl reads it each time anyway.
                let code = herald_easy_setopt_ca_cache_timeout(easy, 0)
                if code != CURLE_NOT_BUILT_IN, code != CURLE_UNKNOWN_OPTION { check("CA_CACHE_TIMEOUT", code) }
            } else {
                check("CAINFO", herald_easy_setopt_string(easy, CURLOPT_CAINFO, nil))
            }
            if let pem = policy.certificateAuthorityData {
                // CURL_BLOB_COPY: curl keeps its own copy, so the bytes need not outlive this call.
                // Before libcurl 7.77 this is CURLE_NOT_BUILT_IN; TrustSettings refuses such a policy
                // when it is built (CurlFeatures.inMemoryCertificateAuthorities), so it never gets here.
                let code = pem.withUnsafeBytes { bytes in
                    herald_easy_setopt_cainfo_blob(easy, bytes.baseAddress, bytes.count)
                }
                check("CAINFO_BLOB", code)
            }
        }

        if let crlFile = policy.revocationListFile {
            // libcurl has OpenSSL check every certificate of the chain against the file's lists
            // (X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL). The store is built afresh for each new
            // connection, so that a list replaced in the file applies to the next one, and no TLS session is
            // resumed: a resumed session skips verification, and would go on trusting a certificate revoked
            // since it was made.
            check("CRLFILE", herald_easy_setopt_string(easy, CURLOPT_CRLFILE, crlFile.path))
            let code = herald_easy_setopt_ca_cache_timeout(easy, 0)
            if code != CURLE_NOT_BUILT_IN, code != CURLE_UNKNOWN_OPTION { check("CA_CACHE_TIMEOUT", code) }
            check("SSL_SESSIONID_CACHE", herald_easy_setopt_long(easy, CURLOPT_SSL_SESSIONID_CACHE, 0))
        }

        if !policy.pinnedPublicKeys.isEmpty {
            // curl accepts the key when it matches any of the ';'-separated pins; base64 has no ';'.
            let pins = policy.pinnedPublicKeys.joined(separator: ";")
            check("PINNEDPUBLICKEY", herald_easy_setopt_string(easy, CURLOPT_PINNEDPUBLICKEY, pins))
        }
    }
}
