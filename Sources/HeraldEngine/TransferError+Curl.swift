import CCurl
import Foundation

// How a finished transfer's `CURLcode` becomes a `TransferError`: here, with every other use of libcurl's
// vocabulary; the public `HeraldError` knows nothing of curl beyond the raw code and text it carries. The table
// is internal and tested on its own through the raw-value form.

extension TransferError {
    /// Maps a finished transfer's `CURLcode` to a ``TransferError``.
    ///
    /// The engine decides cancellation and its own timeouts from its flags *before* calling this, so
    /// `CURLE_ABORTED_BY_CALLBACK` (42) and `CURLE_WRITE_ERROR` (23) map to ``Code/internal`` here.
    ///
    /// - Parameters:
    ///   - code: The transfer's result; never `CURLE_OK`.
    ///   - osErrno: `CURLINFO_OS_ERRNO` for the transfer (0 when unknown).
    ///   - errorBuffer: The text curl wrote to `CURLOPT_ERRORBUFFER`; may be empty.
    ///   - url: The request URL (redacted by the initializer).
    ///   - stage: How far the exchange had gone.
    /// - Returns: The error to report.
    static func fromCurl(
        _ code: CURLcode, osErrno: Int32, errorBuffer: String, url: URL?, stage: CurlErrorMapping.Stage = .sending,
        connected: Bool = false
    ) -> TransferError {
        let raw = Int32(bitPattern: code.rawValue)
        var curlText = errorBuffer.trimmingCharacters(in: .whitespacesAndNewlines)
        if curlText.isEmpty, let strerror = curl_easy_strerror(code) {
            curlText = String(cString: strerror)
        }
        return fromCurl(
            rawCode: raw, osErrno: osErrno, curlMessage: curlText, url: url, stage: stage, connected: connected)
    }

    /// The mapping itself, on the raw value, so it can be tested without a transfer.
    ///
    /// - Parameters:
    ///   - rawCode: The raw `CURLcode`.
    ///   - osErrno: `CURLINFO_OS_ERRNO` (0 when unknown).
    ///   - curlMessage: curl's description of the failure (error buffer or `curl_easy_strerror`).
    ///   - url: The request URL.
    ///   - stage: How far the exchange had gone.
    ///   - connected: Whether the transfer connected (see ``CurlErrorMapping``'s `map`).
    /// - Returns: The error to report.
    static func fromCurl(
        rawCode: Int32, osErrno: Int32, curlMessage: String, url: URL?, stage: CurlErrorMapping.Stage = .sending,
        connected: Bool = false
    ) -> TransferError {
        let mapping = CurlErrorMapping.map(
            rawCode, osErrno: osErrno, curlMessage: curlMessage, stage: stage, connected: connected)
        let statusCode =
            mapping.code == .unacceptableStatusCode ? CurlErrorMapping.trailingStatus(in: curlMessage) : nil
        return TransferError(
            mapping.code,
            mapping.message,
            // No route when the connection was tried: kept, so that a wait for connectivity can tell a network that
            // was away (and may be back by the time the failure is looked at) from a server that refused.
            underlying: rawCode == 7 && osErrno == ENETUNREACH ? POSIXError(.ENETUNREACH) : nil,
            curlCode: rawCode,
            curlMessage: curlMessage.isEmpty ? nil : curlMessage,
            url: url,
            statusCode: statusCode
        )
    }
}

/// The `CURLcode` → ``TransferError/Code`` table (libcurl 7.88.1, codes 0–99), after
/// swift-corelibs-foundation's `urlErrorCode(for:)`.
enum CurlErrorMapping {
    /// How far a transfer's exchange had gone when it failed, which some codes need to say what happened.
    enum Stage {
        /// The request was not all sent (or nothing more is known).
        case sending
        /// The request was sent; no status line had arrived.
        case awaitingResponse
        /// A status line had arrived.
        case receivingResponse
    }

    /// The code and a short message for a raw `CURLcode` and OS errno.
    ///
    /// `errno` refines two cases, as FoundationNetworking does: `ECONNREFUSED` on a transport failure of a
    /// transfer that never had a connection means the host refused it (``TransferError/Code/cannotConnect``),
    /// and `CURLE_COULDNT_CONNECT` with `ETIMEDOUT` is a connect timeout (``TransferError/Code/timedOut``).
    /// Once `connected`, a refusal is history: libcurl never clears the errno, which one address refusing while
    /// another connected (IPv4 and IPv6 of `localhost`), or an earlier transfer on the same handle, left behind.
    /// curl's text and the stage refine more: a receive error about chunks is a malformed response, a send error
    /// once the request went out is the connection breaking after it, and a TLS handshake ended by a reset or a
    /// close without an alert is the connection breaking, not TLS refusing.
    static func map(
        _ rawCode: Int32, osErrno: Int32, curlMessage: String = "", stage: Stage = .sending, connected: Bool = false
    ) -> (code: TransferError.Code, message: String) {
        let base = baseMapping(rawCode)
        if osErrno == ECONNREFUSED, !connected, stage == .sending, refusalRefines.contains(base.code) {
            return (.cannotConnect, "the server refused the connection")
        }
        if rawCode == 7, osErrno == ETIMEDOUT {
            return (.timedOut, "the connection attempt timed out")
        }
        if rawCode == 35,
            osErrno == ECONNRESET || osErrno == EPIPE
                || (osErrno == 0 && curlMessage.contains("SSL_ERROR_SYSCALL"))
        {
            // The handshake didn't fail, the connection did: reset, or closed without a TLS alert (OpenSSL's
            // SSL_ERROR_SYSCALL), as a server restarting or a balancer whose backend is down does. Nothing of TLS
            // was refused, and a new connection may well succeed.
            return (.networkConnectionLost, "the connection broke during the TLS handshake")
        }
        if rawCode == 56, stage != .receivingResponse, curlMessage.hasPrefix("Connection died, tried") {
            // libcurl sends an HTTP/2 stream the server refused (REFUSED_STREAM) again on a new connection, up to
            // five times, then gives up with this text.
            return (.networkConnectionLost, "the server refused the request on every connection tried")
        }
        if rawCode == 56, curlMessage.localizedCaseInsensitiveContains("chunk") {
            // curl reports a chunk size that is not one ("… in the chunky parser") as a receive error: the
            // connection was fine, the bytes were not HTTP, and sending the request again would get the same.
            return (.badServerResponse, "the response's chunked framing is malformed")
        }
        if rawCode == 18, stage == .awaitingResponse {
            // A close with nothing answered (over HTTP/2): the connection ended before the response began.
            return (.networkConnectionLost, "the server closed the connection before answering the request")
        }
        if rawCode == 55, stage != .sending {
            // curl can notice a reset on a write it makes after the request went out and report it as a send
            // failure: say what was under way. (A reset discards what the kernel had received and curl had not
            // read, so a response under way may look unstarted.)
            let what = stage == .receivingResponse ? "while receiving the response" : "after the request was sent"
            return (.networkConnectionLost, "the connection broke \(what)")
        }
        return base
    }

    /// Codes that describe a transport failure, where "connection refused" is the better explanation.
    /// Local failures (out of memory, bad URL, a timeout curl measured itself) keep their own code.
    private static let refusalRefines: Set<TransferError.Code> = [
        .cannotConnect, .networkConnectionLost, .badServerResponse, .tls, .unknown,
    ]

    // swift-format-ignore
    private static func baseMapping(_ rawCode: Int32) -> (code: TransferError.Code, message: String) {
        switch rawCode {
        case 0: (.internal, "a successful transfer was reported as an error")
        case 1: (.unsupportedURL, "the URL scheme is not supported")
        case 2: (.internal, "libcurl failed to initialise the transfer")
        case 3: (.badURL, "the URL is malformed")
        case 4: (.invalidRequest, "the request needs a feature this libcurl was built without")
        case 5: (.proxy, "the proxy host could not be resolved")
        case 6: (.cannotFindHost, "the host could not be resolved")
        case 7: (.cannotConnect, "could not connect to the server")
        case 8: (.badServerResponse, "the server's reply could not be parsed")
        case 16: (.badServerResponse, "HTTP/2 framing error")
        case 18: (.networkConnectionLost, "the connection closed before the whole body arrived")
        case 22: (.unacceptableStatusCode, "the server returned an HTTP error status")
        case 23: (.internal, "the transfer was aborted by its write callback")
        case 25: (.bodyStream, "the upload failed")
        case 26: (.bodyStream, "the request body could not be read")
        case 27: (.outOfMemory, "out of memory")
        case 28: (.timedOut, "the request timed out")
        case 33, 36: (.cannotResume, "the server cannot resume the download at the requested offset")
        case 34: (.internal, "libcurl reported an internal POST error")
        case 35: (.tls, "the TLS handshake failed")
        case 37: (.fileIO, "a local file could not be read")
        case 42: (.internal, "the transfer was aborted by a callback")
        case 43, 48, 49, 93: (.internal, "libcurl rejected how it was called")
        case 45: (.cannotConnect, "the local network interface could not be used")
        case 47: (.tooManyRedirects, "too many redirects")
        case 52: (.badServerResponse, "the server closed the connection without replying")
        case 53, 54, 66: (.tls, "the TLS crypto engine could not be used")
        case 55: (.networkConnectionLost, "the connection broke while sending")
        case 56: (.networkConnectionLost, "the connection broke while receiving")
        case 58: (.tls, "the client certificate could not be used")
        case 59: (.tls, "no acceptable TLS cipher")
        case 60: (.serverCertificateUntrusted, "the server's certificate is not trusted")
        case 61: (.decoding, "the response's content encoding could not be decoded")
        case 63: (.responseTooLarge, "the response exceeds the maximum size")
        case 64: (.tls, "TLS could not be required for the connection")
        case 65: (.bodyStream, "the request body could not be rewound to be sent again")
        case 67, 94: (.authentication, "authentication failed")
        case 77: (.tls, "the CA certificate file could not be loaded")
        case 80: (.tls, "the TLS connection could not be shut down")
        case 81, 89, 99: (.internal, "libcurl reported an unexpected internal state")
        case 82: (.tls, "the certificate revocation list could not be loaded")
        case 83: (.tls, "the certificate issuer check failed")
        case 90: (.serverTrustPinMismatch, "the server's public key does not match the pinned key")
        case 91: (.tls, "the server's certificate status is invalid")
        case 92: (.networkConnectionLost, "the HTTP/2 stream was reset")
        case 95: (.badServerResponse, "HTTP/3 protocol error")
        case 96: (.cannotConnect, "the QUIC connection could not be established")
        case 97: (.proxy, "the proxy handshake failed")
        case 98: (.tls, "the server requires a client certificate")
        // FTP, TFTP, LDAP, SSH, RTSP and obsolete codes: Herald only enables http and https, so these are
        // not expected; they are reported as `unknown` with curl's own text.
        default: (.unknown, "libcurl reported an unclassified error")
        }
    }

    /// The status in curl's `CURLE_HTTP_RETURNED_ERROR` text ("The requested URL returned error: 404").
    static func trailingStatus(in message: String) -> Int? {
        let digits = message.reversed().prefix { $0.isASCII && $0.isNumber }
        guard digits.count == 3, let status = Int(String(digits.reversed())), (100...599).contains(status) else {
            return nil
        }
        return status
    }
}
