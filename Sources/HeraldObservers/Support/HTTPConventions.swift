import Foundation
import Herald

/// The defaults OpenTelemetry's semantic conventions for HTTP clients set, which the observers' configurations
/// start from.
public enum HTTPSemanticConventions {
    /// The methods HTTP defines, which the conventions know by default: `CONNECT`, `DELETE`, `GET`, `HEAD`,
    /// `OPTIONS`, `PATCH`, `POST`, `PUT` and `TRACE`. Any other method is recorded as `_OTHER` in
    /// `http.request.method` (and spelled as sent in a span's `http.request.method_original`).
    public static let knownMethods: Set<String> = [
        "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
    ]

    /// The query parameters whose values `url.full` carries as `REDACTED` by default, compared in any case:
    /// the signatures, key identifiers and session tokens of pre-signed URLs (`AWSAccessKeyId`, `Signature`,
    /// `sig`, `X-Goog-Signature`, and beside the conventions' four `X-Amz-Signature`, `X-Amz-Credential`,
    /// `X-Amz-Security-Token` and `X-Goog-Credential`).
    public static let redactedQueryItems: Set<String> = URL.signatureQueryItems
}

/// The method as a bounded value: anything outside the known set is `_OTHER`, keeping dimensions bounded.
enum KnownHTTPMethod {
    /// `method` when `known` holds it, otherwise `_OTHER`.
    static func bounded(_ method: String?, known: Set<String> = HTTPSemanticConventions.knownMethods) -> String {
        guard let method else { return HTTPAttributeValue.other }
        return known.contains(method) ? method : HTTPAttributeValue.other
    }
}

extension URL {
    /// This URL with user name and password replaced by `REDACTED` (OpenTelemetry's spelling), and the
    /// values of the query items named in `queryItems` (compared case-insensitively) replaced too.
    func redacted(queryItems: Set<String> = []) -> String {
        let url = redactingCredentials(placeholder: LogRedaction.placeholder)
        guard !queryItems.isEmpty else { return url.absoluteString }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            // Not parseable into components: keep nothing that could be a secret.
            return LogRedaction.placeholder
        }
        if let items = components.percentEncodedQueryItems {
            components.percentEncodedQueryItems = items.map { item in
                guard item.value != nil, queryItems.contains(Self.queryItemName(item.name)) else { return item }
                return URLQueryItem(name: item.name, value: LogRedaction.placeholder)
            }
        }
        return components.string ?? LogRedaction.placeholder
    }

    /// A query item's name as the server reads it (`%73ig` is `sig`), lowercased, to compare with redacted names.
    private static func queryItemName(_ percentEncoded: String) -> String {
        (percentEncoded.removingPercentEncoding ?? percentEncoded).lowercased()
    }

    /// The secrets this URL carries in clear: its password and the values of the query items named in
    /// `queryItems` (lowercased), each as written and percent-decoded, the longest first.
    func secretValues(queryItems: Set<String>) -> [String] {
        guard let components = URLComponents(url: self, resolvingAgainstBaseURL: true) else { return [] }
        var secrets: Set<String> = []
        if let password = components.percentEncodedPassword, !password.isEmpty {
            secrets.insert(password)
            secrets.insert(password.removingPercentEncoding ?? password)
        }
        for item in components.percentEncodedQueryItems ?? [] {
            guard let value = item.value, !value.isEmpty, queryItems.contains(Self.queryItemName(item.name)) else {
                continue
            }
            secrets.insert(value)
            secrets.insert(value.removingPercentEncoding ?? value)
        }
        return secrets.sorted { $0.count > $1.count }
    }
}

/// `text` with every occurrence of each of `secrets` replaced by `REDACTED`.
func scrubbing(_ text: String, of secrets: [String]) -> String {
    secrets.reduce(text) { text, secret in
        secret.isEmpty ? text : text.replacingOccurrences(of: secret, with: LogRedaction.placeholder)
    }
}

extension HeraldError {
    /// This error as it may be exported: its URL redacted by `redaction`, and any secret of `requestURL` or of
    /// its own URL removed from its message and libcurl's (a message may quote the URL). The code, status and
    /// curl code are kept; the response, body, file and underlying error are not carried over.
    func redacted(by redaction: LogRedaction, requestURL: URL?) -> HeraldError {
        let queryItems = redaction.queryItemNames
        let secrets = [requestURL, url].compactMap { $0?.secretValues(queryItems: queryItems) }.flatMap { $0 }
        return HeraldError(
            code, scrubbing(message, of: secrets), curlCode: curlCode,
            curlMessage: curlMessage.map { scrubbing($0, of: secrets) },
            url: url.flatMap { URL(string: $0.redacted(queryItems: queryItems)) }, statusCode: statusCode)
    }
}

/// OpenTelemetry's HTTP attribute values, each bounded to a known set so that a metric dimension made from it
/// stays bounded whatever the server answers.
enum HTTPAttributeValue {
    /// The value standing for anything outside a known set, as OpenTelemetry spells it.
    static let other = "_OTHER"

    /// `url.scheme`: `http` or `https` (the schemes Herald sends), anything else `_OTHER`.
    static func scheme(of url: URL) -> String {
        switch url.scheme?.lowercased() {
        case "http": "http"
        case "https": "https"
        default: other
        }
    }

    /// `server.address`: the URL's host in lower case. Host names are compared without case, so one server is
    /// one series and one span attribute however a request spelled it (`API.Example.com`).
    static func serverAddress(of url: URL) -> String? { url.host?.lowercased() }

    /// `http.response.status_code` as a dimension value: the code for 100…599, `_OTHER` outside it (a
    /// server can send any three digits).
    static func statusCode(_ code: Int) -> String {
        (100...599).contains(code) ? String(code) : other
    }

    /// `network.protocol.version` from a status line's version (`HTTP/1.1` → `1.1`, `HTTP/2` → `2`): one of
    /// `1.0`, `1.1`, `2`, `3`, anything else `_OTHER`.
    static func protocolVersion(_ httpVersion: String) -> String {
        HTTPResponse.protocolVersionAttribute(httpVersion) ?? other
    }

    /// `network.protocol.version` of a finished request: the version its last transfer spoke (a revalidated
    /// response's head is the stored one, with the version of the transfer that first fetched it); `nil` for a
    /// response from the cache alone, which no protocol carried.
    static func protocolVersion(of completion: TaskCompletion) -> String? {
        if let version = completion.metrics?.httpVersion { return protocolVersion(version) }
        guard completion.responseSource == .network, let response = completion.response else { return nil }
        return protocolVersion(response.httpVersion)
    }

    /// Whether a finished request's response body arrived over the network (a revalidated response's body is
    /// the stored one; its 304 had none): the only body whose size is the transfer's.
    static func receivedBody(_ completion: TaskCompletion) -> Bool {
        completion.response != nil && completion.responseSource == .network
    }

    /// `error.type` of a finished request, as OpenTelemetry's HTTP conventions define it: the status code when
    /// the response says the request failed (400 or more), else the error code's description
    /// (``HeraldError/Code``'s: bounded), else `nil` for a success. A response below 400 that the task's
    /// serializer or validation refused (``isAfterExchange(_:)``) is no failed HTTP request: `nil` too.
    static func errorType(error: HeraldError?, response: HTTPResponse?) -> String? {
        // The status first: a 503 whose body then broke off is still a 503.
        if let status = response?.statusCode, status >= 400 { return statusCode(status) }
        guard let error, !(response != nil && isAfterExchange(error)) else { return nil }
        return error.code.description
    }

    /// Whether `error` is the task's verdict on a response that arrived whole (its serializer or validation:
    /// a body that didn't parse, a type or status the task doesn't accept), not a failure of the exchange.
    static func isAfterExchange(_ error: HeraldError) -> Bool {
        error.code == .serializationFailed || error.code == .unacceptableContentType
            || error.code == .unacceptableStatusCode
    }
}
