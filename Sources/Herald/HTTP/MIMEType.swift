import Foundation

/// Content types from file name extensions, for multipart file parts without an explicit type.
///
/// Looked up in `/etc/mime.types` when the system has one (Debian's `media-types` package), then in a small
/// built-in table of common types; an extension neither knows is `application/octet-stream`, as in
/// AFNetworking. Extensions compare case-insensitively.
public enum MIMEType {
    /// The type for unknown extensions.
    public static let fallback = "application/octet-stream"

    /// The content type for a file name extension.
    ///
    /// - Parameter pathExtension: An extension without the dot, such as `"png"`; empty for none.
    /// - Returns: The type, such as `"image/png"`, or ``fallback``.
    public static func forPathExtension(_ pathExtension: String) -> String {
        let key = pathExtension.lowercased()
        guard !key.isEmpty else { return fallback }
        return system[key] ?? builtIn[key] ?? fallback
    }

    /// Types Herald knows without `/etc/mime.types`.
    static let builtIn: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "xml": "application/xml", "js": "text/javascript", "json": "application/json",
        "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon", "heic": "image/heic", "mp3": "audio/mpeg",
        "wav": "audio/wav", "mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
        "bin": "application/octet-stream", "cer": "application/pkix-cert", "pem": "application/x-pem-file",
    ]

    /// `/etc/mime.types`, read once: each line is a type followed by its extensions; `#` starts a comment.
    static let system: [String: String] = parse(
        (try? String(contentsOfFile: "/etc/mime.types", encoding: .utf8)) ?? "")

    /// Parses the `mime.types` format; the first type listed for an extension wins.
    static func parse(_ text: String) -> [String: String] {
        var table: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let content = line.prefix { $0 != "#" }
            let words = content.split(whereSeparator: \.isWhitespace)
            guard let type = words.first, type.contains("/") else { continue }
            for word in words.dropFirst() where table[word.lowercased()] == nil {
                table[word.lowercased()] = String(type)
            }
        }
        return table
    }
}
