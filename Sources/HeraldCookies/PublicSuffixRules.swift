import Foundation

/// The rules of a list in the Public Suffix List's format, and the list's algorithm over them: what
/// `PublicSuffixList` answers with. Rules in Unicode are kept in their ASCII form (IDNA 2008 with the UTS #46
/// mapping, by libidn2) and every name asked about is converted the same way, so either form of a name
/// matches either form of a rule.
package struct PublicSuffixRules: Sendable {
    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// Parses a list: one rule per line (`com`, `*.ck`, `!www.ck`), each read up to its first blank,
    /// comments starting with `//`, blank lines ignored; a rule with no ASCII form can match nothing and is
    /// dropped.
    package init(parsing list: String) {
        var plain = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        // Byte by byte: the system list has about 9,500 rules and is read when the first cookie arrives, so
        // Character-wise splitting (Unicode properties for every character) would cost that response a
        // noticeable pause. Rules are ASCII or UTF-8; only ASCII letters change case.
        var text = list
        text.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                var lineEnd = index
                while lineEnd < bytes.count, bytes[lineEnd] != 0x0A, bytes[lineEnd] != 0x0D { lineEnd += 1 }
                var start = index
                while start < lineEnd, Self.isBlank(bytes[start]) { start += 1 }
                var end = start
                while end < lineEnd, !Self.isBlank(bytes[end]) { end += 1 }
                index = lineEnd + 1
                let token = UnsafeBufferPointer(rebasing: bytes[start..<end])
                guard !token.isEmpty, !(token.count >= 2 && token[0] == 0x2F && token[1] == 0x2F) else { continue }
                var rule = String(decoding: token.lazy.map(Self.asciiLowercased), as: UTF8.self)
                if token.contains(where: { $0 >= 0x80 }) {
                    guard let ascii = Self.asciiRule(rule) else { continue }
                    rule = ascii
                }
                if rule.hasPrefix("!") {
                    exceptions.insert(String(rule.dropFirst()))
                } else if rule.hasPrefix("*.") {
                    wildcards.insert(String(rule.dropFirst(2)))
                } else {
                    plain.insert(rule)
                }
            }
        }
        self.rules = plain
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// A rule's ASCII form: its `!` or `*.` kept, every label after it converted.
    private static func asciiRule(_ rule: String) -> String? {
        let marker = rule.hasPrefix("!") ? "!" : rule.hasPrefix("*.") ? "*." : ""
        return IDNA.asciiName(rule.dropFirst(marker.count)).map { marker + $0 }
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0B || byte == 0x0C
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// The number of rules (plain, wildcard and exception).
    package var count: Int { rules.count + wildcards.count + exceptions.count }

    /// Whether `domain`, in either form, is its own public suffix by the list's algorithm.
    package func isPublicSuffix(_ domain: String) -> Bool {
        guard let labels = Self.asciiLabels(of: domain) else { return false }
        return publicSuffixLabelCount(of: labels) >= labels.count
    }

    /// The registrable domain of `host`: its public suffix and one label more; `nil` when it has none.
    package func registrableDomain(for host: String?) -> String? {
        guard let host, let labels = Self.asciiLabels(of: host) else { return nil }
        let suffixCount = publicSuffixLabelCount(of: labels)
        guard suffixCount < labels.count else { return nil }
        let given = host.split(separator: ".", omittingEmptySubsequences: false)
        return given.suffix(suffixCount + 1).map { $0.lowercased() }.joined(separator: ".")
    }

    /// The labels of `name` in ASCII, lowercased; `nil` when it is not a domain name (see
    /// `registrableDomain(for:)`).
    private static func asciiLabels(of name: String) -> [String]? {
        guard !name.isEmpty, !CookieMatching.isIPAddress(name) else { return nil }
        var labels: [String] = []
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, let ascii = IDNA.asciiLabel(label) else { return nil }
            labels.append(ascii)
        }
        return labels
    }

    /// How many of `labels`' last labels its public suffix has, by the list's algorithm.
    private func publicSuffixLabelCount(of labels: [String]) -> Int {
        // suffixes[i]: the name from label i on.
        var suffixes = labels
        for index in labels.indices.dropLast().reversed() {
            suffixes[index] = labels[index] + "." + suffixes[index + 1]
        }
        // An exception rule prevails over every other; its public suffix is the rule without its first label.
        if let index = suffixes.firstIndex(where: exceptions.contains) { return labels.count - index - 1 }
        // Otherwise the rule matching the most labels, a wildcard standing for the label before its base.
        for index in labels.indices {
            if rules.contains(suffixes[index]) { return labels.count - index }
            if index + 1 < labels.count, wildcards.contains(suffixes[index + 1]) { return labels.count - index }
        }
        // The implicit `*` rule: the top-level domain.
        return 1
    }
}
