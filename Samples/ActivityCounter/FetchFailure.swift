import Herald

/// Why one URL did not end as a saved download: what the summary's error column says in words (the error's
/// code stays in `--events`), and which exit status it leads to.
enum FetchFailure: Sendable, Equatable {
    /// The server answered with a status outside 200-299.
    case http(status: Int)
    /// The transfer failed; `code` is Herald's.
    case transfer(HeraldError.Code)
    /// The body is larger than `--max-filesize`.
    case tooLarge(limit: Int64)
    /// The download could not be saved in `--output-dir`.
    case notSaved
    /// SIGHUP, SIGINT or SIGTERM arrived while it ran.
    case interrupted

    init(_ error: HeraldError) {
        if error.code == .downloadMoveFailed {
            self = .notSaved
        } else if [.unacceptableStatusCode, .cannotResume].contains(error.code), let status = error.statusCode,
            !(200..<300).contains(status)
        {
            // The server's status, carried by the error of a continued download: its 503 (the partial file kept
            // for the next attempt) is retried as any 503 is, and its 404 is an HTTP error like any other.
            self = .http(status: status)
        } else {
            self = .transfer(error.code)
        }
    }

    /// The exit status this failure leads to.
    var exitStatus: ExitStatus {
        switch self {
        case .http: .httpError
        case .tooLarge: .networkError
        case .notSaved: .localFileError
        case .interrupted: .interrupted
        case .transfer(let code):
            switch code {
            case .tls, .serverCertificateUntrusted, .serverTrustPinMismatch, .invalidSecurityPolicy: .tlsError
            case .fileIO: .localFileError
            default: .networkError
            }
        }
    }

    /// Whether trying again may help (`--retry`): a connection refused or lost, a timeout, or 408, 429 and 5xx.
    var isTransient: Bool {
        switch self {
        case .http(let status): status == 408 || status == 429 || (500...599).contains(status)
        case .transfer(let code): [.cannotConnect, .networkConnectionLost, .timedOut].contains(code)
        case .tooLarge, .notSaved, .interrupted: false
        }
    }

    /// A short message for a person.
    var message: String {
        switch self {
        case .http(let status): "HTTP \(status) \(Self.reason(status))".trimmingTrailingSpaces()
        case .tooLarge(let limit): "larger than --max-filesize (\(ByteFormat.string(limit)))"
        case .notSaved: "could not be saved in --output-dir"
        case .interrupted: "interrupted"
        case .transfer(let code): Self.message(for: code)
        }
    }

    // swift-format-ignore
    private static func message(for code: HeraldError.Code) -> String {
        switch code {
        case .timedOut: "timed out"
        case .cannotFindHost: "host not found"
        case .cannotConnect: "could not connect"
        case .networkConnectionLost: "connection lost"
        case .badServerResponse: "malformed server response"
        case .tls: "TLS handshake failed"
        case .serverCertificateUntrusted: "server certificate not trusted"
        case .serverTrustPinMismatch: "server key does not match --pin"
        case .tooManyRedirects: "too many redirects"
        case .redirectLoop: "redirect loop"
        case .badURL: "malformed URL"
        case .unsupportedURL: "URL scheme not allowed"
        case .cannotResume: "cannot resume the download"
        case .responseTooLarge: "response too large"
        case .decoding: "content could not be decoded"
        case .proxy: "proxy failed"
        case .authentication: "authentication failed"
        case .fileIO: "local file error"
        case .cancelled: "cancelled"
        case .outOfMemory: "out of memory"
        default: "transfer failed (\(code))"
        }
    }

    // swift-format-ignore
    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}
