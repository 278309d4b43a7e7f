import Foundation

/// The Public Suffix List: the domains under which anyone can register a name (`com`, `co.uk`,
/// `github.io`…), which a cookie's `Domain` may never be (RFC 6265 §5.3 step 5).
///
/// ``shared`` reads the list Debian's `publicsuffix` package installs,
/// `/usr/share/publicsuffix/public_suffix_list.dat`, when it is first used; when that file is missing or
/// unreadable it falls back to a small built-in list of common suffixes (every top-level domain is a public
/// suffix in any case, by the list's implicit `*` rule). Names are compared as written in the list and in
/// URLs: an internationalized domain in its punycode form is matched only by rules written that way.
public struct PublicSuffixList: Sendable {
    /// Where a list came from.
    public enum Source: Sendable, Hashable {
        /// Read from this file.
        case file(String)
        /// The built-in fallback.
        case builtIn
    }

    /// Where Debian's `publicsuffix` package puts the list.
    public static let systemListPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The list every ``CookieStore`` uses: the system's, or the built-in fallback.
    public static let shared: PublicSuffixList = (try? PublicSuffixList(contentsOf: systemListPath)) ?? .builtIn

    /// The built-in fallback: common generic and country suffixes and a few well-known private ones.
    public static let builtIn = PublicSuffixList(
        rules: """
            com net org edu gov mil int info biz io co dev app
            uk co.uk org.uk ac.uk gov.uk me.uk ltd.uk plc.uk net.uk
            jp co.jp ne.jp or.jp ac.jp go.jp
            au com.au net.au org.au edu.au gov.au
            nz co.nz org.nz
            br com.br net.br org.br
            cn com.cn net.cn org.cn
            in co.in net.in org.in
            de fr it es nl be ch at se no dk fi pl ru eu us ca
            github.io gitlab.io herokuapp.com appspot.com blogspot.com cloudfront.net
            """.split(whereSeparator: \.isWhitespace).joined(separator: "\n"), source: .builtIn)

    /// Where the rules came from.
    public let source: Source
    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// Parses a list in the Public Suffix List's format: one rule per line (`com`, `*.ck`, `!www.ck`),
    /// comments starting with `//`, blank lines ignored.
    /// - Parameters:
    ///   - rules: The list's text.
    ///   - source: Where it came from.
    public init(rules: String, source: Source) {
        var plain = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        // Byte by byte: the system list has about 10,000 rules and is read when the first session is made,
        // so Character-wise splitting (Unicode properties for every character) would cost that session's
        // creator a noticeable pause. Rules are ASCII or UTF-8; only ASCII letters change case.
        var text = rules
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
                let rule = String(decoding: token.lazy.map(Self.asciiLowercased), as: UTF8.self)
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
        self.source = source
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0B || byte == 0x0C
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// Reads a list from a file.
    /// - Parameter path: The file, such as ``systemListPath``.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when it can't be read or holds no rule.
    public init(contentsOf path: String) throws(HeraldError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw HeraldError(.fileIO, "Cannot read the public suffix list \(path).", underlying: error)
        }
        self.init(rules: text, source: .file(path))
        guard !rules.isEmpty else {
            throw HeraldError(.fileIO, "The public suffix list \(path) holds no rule.")
        }
    }

    /// The number of rules (plain, wildcard and exception).
    public var count: Int { rules.count + wildcards.count + exceptions.count }

    /// Whether `domain` is a public suffix: a rule names it, a wildcard rule covers it and no exception
    /// rule does, or it is a single label (a top-level domain).
    /// - Parameter domain: A host name, any case, with or without a trailing dot.
    /// - Returns: Whether cookies may not be set for it.
    public func isPublicSuffix(_ domain: String) -> Bool {
        var name = domain.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        while name.hasPrefix(".") { name.removeFirst() }
        if name.isEmpty || exceptions.contains(name) { return false }
        if rules.contains(name) { return true }
        guard let dot = name.firstIndex(of: ".") else { return true }
        return wildcards.contains(String(name[name.index(after: dot)...]))
    }
}
