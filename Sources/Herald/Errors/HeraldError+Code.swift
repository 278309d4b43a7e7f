import HeraldEngine

extension HeraldError {
    /// What went wrong, as an extensible set of codes.
    ///
    /// A struct over a private enum rather than a public enum, so new codes can be added without breaking
    /// `switch` statements in user code. ``description`` is short, stable and bounded (snake case, such
    /// as `"timed_out"`), so it is safe as a log field or a metric dimension.
    public struct Code: Hashable, Sendable {
        /// The engine's code: one for each public one, so a transfer's failure is one of these as it is.
        typealias Base = TransferError.Code

        let base: Base

        init(_ base: Base) {
            self.base = base
        }

        /// The task was cancelled, by the caller or by invalidating its session.
        public static let cancelled = Code(.cancelled)
        /// The request or the connection attempt took longer than its timeout.
        public static let timedOut = Code(.timedOut)
        /// The host name could not be resolved.
        public static let cannotFindHost = Code(.cannotFindHost)
        /// No connection could be made to the host (refused, unreachable, or no route).
        public static let cannotConnect = Code(.cannotConnect)
        /// The connection broke while the request or response was in flight.
        public static let networkConnectionLost = Code(.networkConnectionLost)
        /// The server sent nothing, or something that is not valid HTTP.
        public static let badServerResponse = Code(.badServerResponse)
        /// The TLS handshake failed for a reason other than trust: no common cipher or version, a broken
        /// handshake, a CA or revocation list file that could not be loaded.
        public static let tls = Code(.tls)
        /// The server's certificate was not trusted (`CURLE_PEER_FAILED_VERIFICATION`): its chain does not
        /// lead to a certificate authority of the session's ``SecurityPolicy`` (unknown issuer, self-signed,
        /// expired), it is not valid for the host name in the URL, or it is revoked by the policy's revocation
        /// lists (``SecurityPolicy/checkingRevocation(crlFile:)``; OCSP is not asked).
        /// ``HeraldError/serverCertificateProblem`` says which.
        public static let serverCertificateUntrusted = Code(.serverCertificateUntrusted)
        /// The server's public key matched none of the session's pinned keys
        /// (`CURLE_SSL_PINNEDPUBKEYNOTMATCH`; see ``SecurityPolicy/pinning(publicKeys:)-([PublicKeyPin])``).
        public static let serverTrustPinMismatch = Code(.serverTrustPinMismatch)
        /// A ``SecurityPolicy`` or ``PublicKeyPin`` was given malformed input (a pin that is not
        /// `sha256//<base64 of 32 bytes>`, PEM data without a certificate); thrown when it is built, before
        /// any connection.
        public static let invalidSecurityPolicy = Code(.invalidSecurityPolicy)
        /// The redirect hop limit was reached.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// A redirect led back to a request already sent in this chain: the same method and URL, with the same
        /// cookies (a redirect back after a hop set a cookie is followed).
        public static let redirectLoop = Code(.redirectLoop)
        /// The URL is malformed.
        public static let badURL = Code(.badURL)
        /// The URL's scheme is not one the session allows (``SessionConfiguration/allowedProtocols``), or a
        /// redirect leads to a scheme other than `http` and `https`, or from `https` to `http` (unless
        /// ``SessionConfiguration/allowsInsecureRedirects``).
        public static let unsupportedURL = Code(.unsupportedURL)
        /// The request was rejected before any byte was sent, such as a header containing CR or LF.
        public static let invalidRequest = Code(.invalidRequest)
        /// A download could not be resumed from its resume data or offset.
        public static let cannotResume = Code(.cannotResume)
        /// The session was invalidated before the task could run.
        public static let sessionInvalidated = Code(.sessionInvalidated)
        /// A finished download could not be moved to its destination; the temporary file is kept.
        public static let downloadMoveFailed = Code(.downloadMoveFailed)
        /// The response body could not be turned into the requested value.
        public static let serializationFailed = Code(.serializationFailed)
        /// The response's status code is not one the serializer accepts.
        public static let unacceptableStatusCode = Code(.unacceptableStatusCode)
        /// The response's `Content-Type` is not one the serializer accepts.
        public static let unacceptableContentType = Code(.unacceptableContentType)
        /// The request body could not be read or re-sent.
        public static let bodyStream = Code(.bodyStream)
        /// Reading or writing a local file failed.
        public static let fileIO = Code(.fileIO)
        /// A file that takes one user at a time has one already: another ``CookieStore``, of this process or
        /// another, keeps its cookies in the same file.
        public static let fileInUse = Code(.fileInUse)
        /// The response exceeded the configured maximum size.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The response's content encoding (gzip, br, …) could not be decoded.
        public static let decoding = Code(.decoding)
        /// The proxy could not be resolved, the proxy handshake failed, an HTTPS proxy's certificate was not
        /// trusted, or the proxy refused to open a tunnel with a status other than `407` (the error's
        /// ``HeraldError/statusCode``; a `407` is ``HeraldError/Code/authentication``).
        public static let proxy = Code(.proxy)
        /// Authentication with the server or proxy failed.
        public static let authentication = Code(.authentication)
        /// A memory allocation failed.
        public static let outOfMemory = Code(.outOfMemory)
        /// The kernel's routing information could not be read: a routing netlink socket was refused (a sandbox
        /// without `AF_NETLINK`) or its answer was unreadable. Thrown by
        /// ``NetworkReachability/startMonitoring()``.
        public static let reachabilityUnavailable = Code(.reachabilityUnavailable)
        /// An unexpected failure inside Herald or libcurl (a bug, not a network condition).
        public static let `internal` = Code(.internal)
        /// A failure Herald does not classify; ``HeraldError/curlMessage`` says more.
        public static let unknown = Code(.unknown)

        /// Every code, for tests and for pre-registering metric dimensions.
        static var allCodes: [Code] { Base.allCases.map(Code.init) }
    }
}

extension HeraldError.Code: CustomStringConvertible {
    /// A short, stable, snake-case name such as `"timed_out"`, safe as a metric dimension.
    public var description: String {
        switch base {
        case .cancelled: "cancelled"
        case .timedOut: "timed_out"
        case .cannotFindHost: "cannot_find_host"
        case .cannotConnect: "cannot_connect"
        case .networkConnectionLost: "network_connection_lost"
        case .badServerResponse: "bad_server_response"
        case .tls: "tls"
        case .serverCertificateUntrusted: "server_certificate_untrusted"
        case .serverTrustPinMismatch: "server_trust_pin_mismatch"
        case .invalidSecurityPolicy: "invalid_security_policy"
        case .tooManyRedirects: "too_many_redirects"
        case .redirectLoop: "redirect_loop"
        case .badURL: "bad_url"
        case .unsupportedURL: "unsupported_url"
        case .invalidRequest: "invalid_request"
        case .cannotResume: "cannot_resume"
        case .sessionInvalidated: "session_invalidated"
        case .downloadMoveFailed: "download_move_failed"
        case .serializationFailed: "serialization_failed"
        case .unacceptableStatusCode: "unacceptable_status_code"
        case .unacceptableContentType: "unacceptable_content_type"
        case .bodyStream: "body_stream"
        case .fileIO: "file_io"
        case .fileInUse: "file_in_use"
        case .responseTooLarge: "response_too_large"
        case .decoding: "decoding"
        case .proxy: "proxy"
        case .authentication: "authentication"
        case .outOfMemory: "out_of_memory"
        case .reachabilityUnavailable: "reachability_unavailable"
        case .internal: "internal"
        case .unknown: "unknown"
        }
    }
}
