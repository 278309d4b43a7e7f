import Foundation

extension URL {
    /// The port, or the scheme's default (80 for http, 443 for https), or `nil` for another scheme without
    /// a port. The one implementation in the package: origins for redirects and protection spaces in
    /// `Herald`, `server.port` in `HeraldObservers`.
    package var effectivePort: Int? {
        if let port { return port }
        switch scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}
