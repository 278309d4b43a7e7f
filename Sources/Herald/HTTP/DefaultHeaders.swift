import Foundation

/// The header fields every ``SessionManager`` adds to a request that sets neither the field itself nor
/// through ``SessionConfiguration/httpAdditionalHeaders``, as AFNetworking's request serializer does:
/// `User-Agent` and `Accept-Language`. Set either field to replace it; set it to an empty value to send it
/// empty.
public enum DefaultHeaders {
    /// The default `User-Agent`: `HeraldVersion.userAgent`, such as `"Herald/0.9.0 libcurl/7.88.1"`.
    public static let userAgent: String = HeraldVersion.userAgent

    /// The default `Accept-Language`, from this process's locale environment, read once: see
    /// ``acceptLanguage(environment:)``.
    public static let acceptLanguage: String = acceptLanguage(environment: ProcessInfo.processInfo.environment)

    /// An `Accept-Language` value for a locale environment, the way AFNetworking builds one from the
    /// preferred languages: each language with a quality falling by 0.1 from 1, at most six
    /// (`"fr-CH;q=1, fr;q=0.9, en;q=0.8"`).
    ///
    /// The languages are those of `LANGUAGE` (a colon-separated list, as GNU gettext reads it) followed by
    /// the first of `LC_ALL`, `LC_MESSAGES` and `LANG` that is set; POSIX names become language tags
    /// (`de_AT.UTF-8@euro` → `de-AT`), `C` and `POSIX` are skipped, as is a name with anything but ASCII letters, digits and hyphens left
    /// (a CR or LF there would split the request), and repeats are dropped. With none left
    /// the value is `"en;q=1"`.
    ///
    /// - Parameter environment: Environment variables, such as `ProcessInfo.processInfo.environment`.
    /// - Returns: The header value.
    public static func acceptLanguage(environment: [String: String]) -> String {
        var names = (environment["LANGUAGE"] ?? "").split(separator: ":").map(String.init)
        if let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap({ environment[$0] }).first(where: {
            !$0.isEmpty
        }) {
            names.append(locale)
        }
        var tags: [String] = []
        for name in names {
            let base = name.prefix { $0 != "." && $0 != "@" }
            guard !base.isEmpty, base != "C", base != "POSIX" else { continue }
            let tag = base.replacingOccurrences(of: "_", with: "-")
            // A language tag is letters, digits and hyphens: anything else in the environment (a CR or LF
            // that would split the request) is not a language and is skipped.
            guard tag.utf8.allSatisfy(isLanguageTagByte) else { continue }
            if !tags.contains(tag) { tags.append(tag) }
        }
        if tags.isEmpty { tags = ["en"] }
        return tags.prefix(6).enumerated().map { index, tag in
            "\(tag);q=\(index == 0 ? "1" : "0.\(10 - index)")"
        }.joined(separator: ", ")
    }

    /// Whether `byte` is an ASCII letter, digit or hyphen.
    private static func isLanguageTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            true
        default: false
        }
    }
}
