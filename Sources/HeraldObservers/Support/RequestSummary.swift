import Foundation
import Herald

/// What observers need to know about a notification's task: its method and URL.
///
/// The notification's `object` is the `SessionTask`, whose `originalRequest`
/// carries them; an object that is not a task (a hand-made notification) yields `nil`.
struct RequestSummary: Sendable {
    var method: String
    var url: URL

    init?(object: (any AnyObject & Sendable)?) {
        guard let task = object as? SessionTask else { return nil }
        method = task.originalRequest.method
        url = task.originalRequest.url
    }
}

/// HTTP methods OpenTelemetry knows; anything else is reported as `_OTHER`, keeping dimensions bounded.
enum KnownHTTPMethod {
    static let all: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `method` when it is a known method, otherwise `_OTHER`.
    static func bounded(_ method: String?) -> String {
        guard let method, all.contains(method) else { return "_OTHER" }
        return method
    }
}

extension URL {
    /// This URL with user name and password replaced by `REDACTED` (OpenTelemetry's spelling), and the
    /// values of the query items named in `queryItems` (compared case-insensitively) replaced too.
    func redacted(queryItems: Set<String> = []) -> String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else {
            // Not parseable into components: keep nothing that could be a credential.
            return absoluteString.contains("@") || !queryItems.isEmpty ? "REDACTED" : absoluteString
        }
        if components.percentEncodedUser != nil { components.percentEncodedUser = "REDACTED" }
        if components.percentEncodedPassword != nil { components.percentEncodedPassword = "REDACTED" }
        if !queryItems.isEmpty, let items = components.percentEncodedQueryItems {
            components.percentEncodedQueryItems = items.map { item in
                guard item.value != nil, queryItems.contains(item.name.lowercased()) else { return item }
                return URLQueryItem(name: item.name, value: "REDACTED")
            }
        }
        return components.string ?? "REDACTED"
    }

    /// The port, or the scheme's default (80 for http, 443 for https), or `nil`.
    var effectivePort: Int? {
        if let port { return port }
        switch scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}

extension HTTPResponse {
    /// `"2xx"`…`"5xx"`, or `"other"` for a status outside 100…599.
    var statusClass: String {
        (100...599).contains(statusCode) ? "\(statusCode / 100)xx" : "other"
    }
}
