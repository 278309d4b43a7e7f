import Foundation

extension URL {
    /// The placeholder that replaces a user name or password.
    package static let redactedCredential = "***"

    /// The query parameters that carry a pre-signed URL's secrets (signatures, key identifiers, session tokens),
    /// lowercased: `AWSAccessKeyId`, `Signature`, `sig`, `X-Amz-Signature`, `X-Amz-Credential`,
    /// `X-Amz-Security-Token`, `X-Goog-Signature`, `X-Goog-Credential`. Compared in any case.
    package static let signatureQueryItems: Set<String> = [
        "awsaccesskeyid", "signature", "sig", "x-goog-signature", "x-amz-signature", "x-amz-credential",
        "x-amz-security-token", "x-goog-credential",
    ]

    /// This URL with the values of ``signatureQueryItems`` in its query replaced by `placeholder`; unchanged when
    /// it has none.
    package func redactingSignatures(placeholder: String = redactedCredential) -> URL {
        guard query != nil, var components = URLComponents(url: self, resolvingAgainstBaseURL: true),
            let items = components.percentEncodedQueryItems,
            items.contains(where: { Self.signatureQueryItems.contains($0.name.lowercased()) })
        else { return self }
        components.percentEncodedQueryItems = items.map { item in
            Self.signatureQueryItems.contains(item.name.lowercased())
                ? URLQueryItem(name: item.name, value: placeholder) : item
        }
        return components.url ?? self
    }

    /// This URL with any user name and password replaced by `placeholder`, safe to log or put in an error.
    ///
    /// `https://alice:secret@example.com/x` becomes `https://***:***@example.com/x`; a URL without
    /// credentials is returned unchanged. The one implementation in the package: HeraldObservers calls it
    /// with its own placeholder.
    /// - Parameter placeholder: What replaces the user name and the password; default `***`.
    package func redactingCredentials(placeholder: String = redactedCredential) -> URL {
        let absolute = absoluteString
        // Cheap exit for the common case: credentials need an "@" in the authority.
        guard absolute.containsAtSign else { return self }
        if var components = URLComponents(url: self, resolvingAgainstBaseURL: true) {
            guard components.percentEncodedUser != nil || components.percentEncodedPassword != nil else { return self }
            if components.percentEncodedUser != nil { components.percentEncodedUser = placeholder }
            if components.percentEncodedPassword != nil { components.percentEncodedPassword = placeholder }
            if let redacted = components.url { return redacted }
        }
        // URLComponents could not parse or rebuild it: redact the authority's userinfo by hand rather than
        // risk returning a password.
        return Self.redactingUserinfo(in: absolute, placeholder: placeholder) ?? URL(string: "redacted:")!
    }

    /// Replaces the userinfo of `scheme://userinfo@host…` in a string, or returns `nil` when it can't.
    private static func redactingUserinfo(in string: String, placeholder: String) -> URL? {
        guard let schemeEnd = string.range(of: "://") else { return nil }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = string[authorityStart...].firstIndex { "/?#".contains($0) } ?? string.endIndex
        let authority = string[authorityStart..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return URL(string: string) }
        let userinfo = authority[..<at]
        let redactedUserinfo =
            userinfo.contains(":") ? "\(placeholder):\(placeholder)" : placeholder
        return URL(string: String(string[..<authorityStart]) + redactedUserinfo + String(string[at...]))
    }
}

extension String {
    /// This text with the user name and password of every URL written in it (`scheme://user:password@host`)
    /// replaced by `placeholder`, as ``Foundation/URL/redactingCredentials(placeholder:)`` does for a URL:
    /// for messages that quote a URL, such as libcurl's error texts, which quote a proxy's URL whole.
    /// - Parameter placeholder: What replaces the user name and the password; default `***`.
    ///
    /// A value libcurl quotes in single quotes (`Unsupported proxy syntax in 'user:p#ss@proxy:3128'`) may be no
    /// URL it could read: no scheme, a password with an unencoded `#`, `/` or space, a bad port. Within such
    /// quotes, everything up to the last `@` (after the scheme, if there is one) is taken for credentials.
    package func redactingURLCredentials(placeholder: String = URL.redactedCredential) -> String {
        // Cheap exit for nearly every message: credentials need an "@".
        guard containsAtSign else { return self }
        var result = ""
        var rest = Self.redactingQuotedCredentials(in: self, placeholder: placeholder)[...]
        while let separator = rest.range(of: "://") {
            result += rest[..<separator.upperBound]
            rest = rest[separator.upperBound...]
            // The authority ends where a path, query or fragment begins, or where the quoted URL ends.
            let authorityEnd = rest.firstIndex { "/?#'\"<> \t\r\n".contains($0) } ?? rest.endIndex
            guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { continue }
            let userInformation = rest[..<at]
            result += userInformation.contains(":") ? "\(placeholder):\(placeholder)" : placeholder
            rest = rest[at...]
        }
        return result + rest
    }

    /// `text` with what precedes the last `@` of each single-quoted span (after a `scheme://` in it) replaced by
    /// `placeholder`, or `placeholder:placeholder` when it has a `:`.
    private static func redactingQuotedCredentials(in text: String, placeholder: String) -> String {
        var result = ""
        var rest = text[...]
        while let open = rest.firstIndex(of: "'"),
            var close = rest[rest.index(after: open)...].firstIndex(of: "'")
        {
            // A password may hold a `'` itself: a quoted span without an `@`, followed by one, runs to the last
            // quote after that `@` (libcurl's messages end with the value they quote).
            if !rest[open..<close].contains("@"), let at = rest[close...].firstIndex(of: "@"),
                let last = rest[at...].lastIndex(of: "'")
            {
                close = last
            }
            let quoted = rest[rest.index(after: open)..<close]
            result += rest[...open]
            let start = quoted.range(of: "://")?.upperBound ?? quoted.startIndex
            if let at = quoted.lastIndex(of: "@"), start < at {
                let userInformation = quoted[start..<at]
                result += quoted[..<start]
                result += userInformation.contains(":") ? "\(placeholder):\(placeholder)" : placeholder
                result += quoted[at...]
            } else {
                result += quoted
            }
            result += "'"
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}

extension String {
    /// Whether the text has an `@`, by a byte scan: Foundation's `contains` on a String would search through
    /// CFString, and this runs for every task. A native string's bytes are scanned in place (the generic
    /// `utf8.contains` walks the view index by index, about 60 instructions a byte).
    fileprivate var containsAtSign: Bool {
        utf8.withContiguousStorageIfAvailable { bytes in bytes.contains(UInt8(ascii: "@")) }
            ?? utf8.contains(UInt8(ascii: "@"))
    }
}
