import Foundation
import HeraldCookies
import HeraldNotifications

/// The Public Suffix List: the domains under which anyone can register a name (`com`, `co.uk`,
/// `github.io`…), which a cookie's `Domain` may never be (RFC 6265 §5.3 step 5).
///
/// ``shared`` reads the list Debian's `publicsuffix` package installs,
/// `/usr/share/publicsuffix/public_suffix_list.dat`, when it is first used; when that file is missing or
/// unreadable it falls back to a small built-in list of common suffixes (every top-level domain is a public
/// suffix in any case, by the list's implicit `*` rule).
///
/// The list writes internationalized rules in Unicode (`公司.cn`) while hosts arrive in punycode
/// (`xn--55qx5d.cn`): each rule is converted once, when the list is read, to its ASCII form (IDNA 2008
/// with the UTS #46 mapping, by libidn2), and each name asked about is converted the same way, so either
/// form of a name matches either form of a rule.
///
/// Rules are applied as the list's own algorithm says: the rule matching the most labels prevails, a
/// wildcard rule (`*.kobe.jp`) stands for any one label in its place, an exception rule (`!city.kobe.jp`)
/// prevails over every other and makes the name it names registrable, and a name no rule matches has its
/// last label as its public suffix.
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
    ///
    /// Read when it is first asked anything (a ``CookieStore`` asks when it parses its first `Set-Cookie`
    /// field, when ``CookieStore/setCookie(_:)`` is called, and when a persistent store loads a file holding
    /// cookies), not when a store or a session that holds it is made: a process that never handles a cookie
    /// never reads the file (about 9,500 rules, each converted to its ASCII form).
    public static let shared = PublicSuffixList(readingOnFirstUse: {
        (try? PublicSuffixList(contentsOf: systemListPath)) ?? .builtIn
    })

    /// The built-in fallback: common generic and country suffixes, China's internationalized ones and a few
    /// well-known private ones.
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
            中国 中國 公司.cn 网络.cn 網絡.cn
            github.io gitlab.io herokuapp.com appspot.com blogspot.com cloudfront.net
            """.split(whereSeparator: \.isWhitespace).joined(separator: "\n"), source: .builtIn)

    /// Where the rules came from.
    public var source: Source { loaded.source }

    /// The parsed rules, which the cookie parser applies.
    package var ruleSet: PublicSuffixRules { loaded.ruleSet }

    private let rules: Rules

    /// A list's rules: parsed already, or read on first use.
    private enum Rules: Sendable {
        case parsed(PublicSuffixRules, Source)
        case onFirstUse(FirstUse)
    }

    /// Reads a list once, when it is first asked for, by whichever thread asks first; the others wait for it.
    private final class FirstUse: Sendable {
        private let read: @Sendable () -> PublicSuffixList
        private let list = Locked<PublicSuffixList?>(nil)

        init(read: @escaping @Sendable () -> PublicSuffixList) {
            self.read = read
        }

        var value: PublicSuffixList {
            list.withLock { list in
                if let list { return list }
                let read = read()
                list = read
                return read
            }
        }
    }

    /// The rules and their source, read now if they were left for their first use.
    private var loaded: (ruleSet: PublicSuffixRules, source: Source) {
        switch rules {
        case .parsed(let ruleSet, let source): (ruleSet, source)
        case .onFirstUse(let firstUse): firstUse.value.loaded
        }
    }

    /// A list that `read` makes when the list is first asked a question (by a cookie store parsing its first
    /// `Set-Cookie` field, say), once; what ``shared`` is.
    /// - Parameter read: Makes the list; called at most once.
    package init(readingOnFirstUse read: @escaping @Sendable () -> PublicSuffixList) {
        self.rules = .onFirstUse(FirstUse(read: read))
    }

    /// Parses a list in the Public Suffix List's format: one rule per line (`com`, `*.ck`, `!www.ck`),
    /// each read up to its first blank, comments starting with `//`, blank lines ignored. Rules written in
    /// Unicode are kept in their ASCII form; one that has none (not a valid domain name) can match nothing
    /// and is dropped.
    /// - Parameters:
    ///   - rules: The list's text.
    ///   - source: Where it came from.
    public init(rules: String, source: Source) {
        self.rules = .parsed(PublicSuffixRules(parsing: rules), source)
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
        guard ruleSet.count > 0 else {
            throw HeraldError(.fileIO, "The public suffix list \(path) holds no rule.")
        }
    }

    /// The number of rules (plain, wildcard and exception).
    public var count: Int { ruleSet.count }

    /// Whether `domain` is a public suffix: its own public suffix by the list's algorithm (a rule names it, a
    /// wildcard rule covers it and no exception rule names it, or it is a single label, a top-level domain).
    ///
    /// Either form of an internationalized name is understood (`公司.cn` and `xn--55qx5d.cn` answer alike),
    /// in any case. A name with an empty label (a leading or trailing dot, `..`), an IP address, and a label
    /// with no valid ASCII form are not domain names: the answer is `false`.
    /// - Parameter domain: A domain name.
    /// - Returns: Whether it is a public suffix, so that cookies may not be set for it.
    public func isPublicSuffix(_ domain: String) -> Bool {
        ruleSet.isPublicSuffix(domain)
    }

    /// The registrable domain of `host`: its public suffix and the one label before it (`example.co.uk` for
    /// `www.example.co.uk`), what the Public Suffix List's test file calls `checkPublicSuffix`.
    ///
    /// The answer is lowercased and keeps the form each label was given in (`食狮.公司.cn` for
    /// `www.食狮.公司.cn`, `xn--85x722f.xn--55qx5d.cn` for its punycode form). It is `nil` when `host` is
    /// `nil`, is a public suffix itself (`com`, `co.uk`, an unlisted top-level domain), is an IP address, has
    /// an empty label (a leading or trailing dot, `..`), or has a label with no valid ASCII form.
    /// - Parameter host: A host name, any case, in Unicode or punycode; `nil` is accepted (a URL without a
    ///   host has none).
    /// - Returns: The registrable domain, or `nil`.
    public func registrableDomain(for host: String?) -> String? {
        ruleSet.registrableDomain(for: host)
    }
}
