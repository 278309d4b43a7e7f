import Foundation

/// Why a transfer failed, in the engine's terms.
///
/// `Herald` presents it to callers as its public `TransferError`, whose code wraps ``Code`` (one case for
/// each public code, so the two never disagree) and which adds what only a task knows: the response body
/// kept, the metrics, a file kept on disk. The engine makes these for its own failures; a `Herald` error
/// that must travel through a transfer (a streamed body that could not be opened) comes in as one too.
package struct TransferError: Error, Sendable {
    /// What went wrong. Every public `TransferError.Code` is one of these.
    package enum Code: Hashable, Sendable, CaseIterable {
        case cancelled, timedOut, cannotFindHost, cannotConnect, networkConnectionLost, badServerResponse, tls,
            serverCertificateUntrusted, serverTrustPinMismatch, invalidSecurityPolicy
        case tooManyRedirects, redirectLoop, badURL, unsupportedURL, invalidRequest, cannotResume,
            sessionInvalidated, downloadMoveFailed, serializationFailed
        case unacceptableStatusCode, unacceptableContentType, bodyStream, fileIO, fileInUse, responseTooLarge, decoding,
            proxy, authentication, outOfMemory, reachabilityUnavailable, `internal`, unknown
    }

    /// What went wrong.
    package var code: Code
    /// A human-readable explanation.
    package var message: String
    /// The error that caused this one.
    package var underlying: (any Error & Sendable)?
    /// The raw `CURLcode`, when libcurl reported the failure.
    package var curlCode: Int32?
    /// libcurl's description of the failure.
    package var curlMessage: String?
    /// The request URL (credentials are redacted when the error becomes public).
    package var url: URL?
    /// The HTTP status code, for ``Code/unacceptableStatusCode``.
    package var statusCode: Int?
    /// Why the server's certificate was not trusted, for ``Code/serverCertificateUntrusted``, when the TLS library
    /// said.
    package var certificateProblem: CertificateProblem?
    /// The session's own error this one carries through the transfer unchanged (a cancellation's reason, a
    /// streamed body that could not be opened), to be handed back as it was.
    package var original: (any Error & Sendable)?

    /// Why a server's certificate was not trusted, from OpenSSL's verification result and libcurl's host check.
    package enum CertificateProblem: Hashable, Sendable {
        case expired, notYetValid, unknownIssuer, selfSigned, hostNameMismatch, revoked, revocationUnknown
        /// Another OpenSSL verification result (`X509_V_ERR_*`).
        case other(verifyResult: Int)

        /// The problem a failed verification names: `verifyResult` is `CURLINFO_SSL_VERIFYRESULT` (OpenSSL's
        /// `X509_V_ERR_*`), `curlMessage` libcurl's text, which alone says when its own host name check failed
        /// (the result is then 1, "unspecified"). `nil` when neither tells.
        package init?(verifyResult: Int, curlMessage: String) {
            switch verifyResult {
            case 9: self = .notYetValid
            case 10: self = .expired
            case 2, 20, 21: self = .unknownIssuer
            case 18, 19: self = .selfSigned
            case 62, 64: self = .hostNameMismatch
            case 23: self = .revoked
            // No usable revocation list for a certificate of the chain: none from its issuer, or one not yet or
            // no longer valid, badly signed, malformed, or of a scope OpenSSL can't apply.
            case 3, 5, 8, 11, 12, 15, 16, 33, 35, 36, 44, 54: self = .revocationUnknown
            case 0, 1:
                guard curlMessage.contains("host name") || curlMessage.contains("common name") else { return nil }
                self = .hostNameMismatch
            default: self = .other(verifyResult: verifyResult)
            }
        }

        /// A sentence for the error's message.
        package var explanation: String {
            switch self {
            case .expired: "The server's certificate has expired."
            case .notYetValid: "The server's certificate is not valid yet."
            case .unknownIssuer:
                "The server's certificate was issued by an authority the session doesn't trust."
            case .selfSigned: "The server's certificate is self-signed, or its chain ends in an untrusted root."
            case .hostNameMismatch: "The server's certificate is not valid for the host name in the URL."
            case .revoked:
                "The server's certificate, or one of its chain, is revoked by the session's revocation lists."
            case .revocationUnknown:
                "The session's revocation lists have no usable list for a certificate of the server's chain."
            case .other(let result): "The server's certificate failed verification (OpenSSL result \(result))."
            }
        }
    }

    /// Creates an error.
    package init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil, curlCode: Int32? = nil,
        curlMessage: String? = nil, url: URL? = nil, statusCode: Int? = nil, original: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.curlCode = curlCode
        self.curlMessage = curlMessage
        self.url = url
        self.statusCode = statusCode
        self.original = original
    }
}
