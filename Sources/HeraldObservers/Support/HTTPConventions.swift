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

extension HTTPResponse {
    /// `"1xx"`…`"5xx"`, or `"other"` for a status outside 100…599.
    var statusClass: String {
        // Constant strings: this runs for every completion a metrics or tracing observer sees.
        switch statusCode {
        case 100...199: "1xx"
        case 200...299: "2xx"
        case 300...399: "3xx"
        case 400...499: "4xx"
        case 500...599: "5xx"
        default: "other"
        }
    }
}
