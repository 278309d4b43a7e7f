import Foundation
import Herald

/// HTTP methods OpenTelemetry knows; anything else is reported as `_OTHER`, keeping dimensions bounded.
enum KnownHTTPMethod {
    static let all: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `method` when it is a known method, otherwise `_OTHER`.
    static func bounded(_ method: String?) -> String {
        guard let method else { return "_OTHER" }
        // The common methods without hashing: this runs for every completion.
        if method == "GET" || method == "POST" { return method }
        return all.contains(method) ? method : "_OTHER"
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
                guard item.value != nil, queryItems.contains(item.name.lowercased()) else { return item }
                return URLQueryItem(name: item.name, value: LogRedaction.placeholder)
            }
        }
        return components.string ?? LogRedaction.placeholder
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

    /// `http.response.status_code` as a dimension value: the code for 100…599, `_OTHER` outside it (a
    /// server can send any three digits).
    static func statusCode(_ code: Int) -> String {
        (100...599).contains(code) ? String(code) : other
    }

    /// `network.protocol.version` from a status line's version (`HTTP/1.1` → `1.1`, `HTTP/2` → `2`): one of
    /// `1.0`, `1.1`, `2`, `3`, anything else `_OTHER`.
    static func protocolVersion(_ httpVersion: String) -> String {
        switch httpVersion {
        case "HTTP/1.1": "1.1"
        case "HTTP/2", "HTTP/2.0": "2"
        case "HTTP/1.0": "1.0"
        case "HTTP/3", "HTTP/3.0": "3"
        default: other
        }
    }

    /// `error.type` of a finished request, as OpenTelemetry's HTTP conventions define it: the status code when
    /// the response says the request failed (400 or more), else the error code's description
    /// (``HeraldError/Code``'s: bounded), else `nil` for a success.
    static func errorType(error: HeraldError?, response: HTTPResponse?) -> String? {
        if let error, error.code != .unacceptableStatusCode { return error.code.description }
        if let status = response?.statusCode, status >= 400 { return statusCode(status) }
        return error?.code.description
    }
}
