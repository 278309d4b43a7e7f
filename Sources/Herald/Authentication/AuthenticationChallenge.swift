import Foundation
import HeraldEngine

/// The HTTP authentication schemes Herald answers; libcurl computes the header for each.
public enum AuthenticationScheme: String, Sendable, Hashable, CaseIterable {
    /// RFC 7617 Basic: the credential is sent base64-encoded (use it over `https` only).
    case basic = "Basic"
    /// RFC 7616 Digest: the password is never sent; libcurl answers the server's nonce.
    case digest = "Digest"
}

/// Where a credential applies: the server (scheme, host, port), the authentication scheme and the realm
/// it named in `WWW-Authenticate`. The key of a ``CredentialStore``.
public struct ProtectionSpace: Sendable, Hashable, CustomStringConvertible {
    /// The URL scheme, lowercased: `"http"` or `"https"`.
    public var urlScheme: String
    /// The host, lowercased.
    public var host: String
    /// The port (the scheme's default when the URL has none).
    public var port: Int
    /// The authentication scheme the server asked for.
    public var authenticationScheme: AuthenticationScheme
    /// The realm the server named, or `nil` when it named none.
    public var realm: String?

    /// Creates a protection space.
    /// - Parameters:
    ///   - urlScheme: `"http"` or `"https"`; lowercased.
    ///   - host: The host; lowercased.
    ///   - port: The port.
    ///   - authenticationScheme: Basic or Digest.
    ///   - realm: The realm, if any.
    public init(
        urlScheme: String, host: String, port: Int, authenticationScheme: AuthenticationScheme, realm: String?
    ) {
        self.urlScheme = urlScheme.lowercased()
        self.host = host.lowercased()
        self.port = port
        self.authenticationScheme = authenticationScheme
        self.realm = realm
    }

    /// `"Basic realm=\"herald\" at http://127.0.0.1:8080"`.
    public var description: String {
        "\(authenticationScheme.rawValue) realm=\"\(realm ?? "")\" at \(urlScheme)://\(host):\(port)"
    }
}

/// A `401 Unauthorized` answer that Herald asks about: what the server wants and how often a credential
/// already failed. AF's (URLSession's) `URLAuthenticationChallenge`, for HTTP Basic and Digest.
///
/// Server-trust (TLS) decisions are not challenges in Herald; they belong to the session's
/// ``SessionConfiguration/securityPolicy`` (see ``SecurityPolicy``).
public struct AuthenticationChallenge: Sendable {
    /// Where the credential would apply.
    public var protectionSpace: ProtectionSpace
    /// How many credentials Herald already sent for this task that the server refused (0 at first).
    public var previousFailureCount: Int
    /// The 401 response that carried the challenge.
    public var failureResponse: HTTPResponse
    /// The credential the session's ``CredentialStore`` holds for ``protectionSpace``, if any.
    public var proposedCredential: Credential?

    /// Creates a challenge (for tests of your own hooks).
    public init(
        protectionSpace: ProtectionSpace, previousFailureCount: Int, failureResponse: HTTPResponse,
        proposedCredential: Credential?
    ) {
        self.protectionSpace = protectionSpace
        self.previousFailureCount = previousFailureCount
        self.failureResponse = failureResponse
        self.proposedCredential = proposedCredential
    }
}

/// How a challenge is answered: AF's `NSURLSessionAuthChallengeDisposition`.
public enum AuthenticationDisposition: Sendable, Hashable {
    /// Send the request again with this credential (a refused one leads to another challenge with a
    /// higher ``AuthenticationChallenge/previousFailureCount``).
    case useCredential(Credential)
    /// Herald's default: the ``CredentialStore``'s credential for the protection space, unless it was
    /// already refused; with none, the 401 response is the attempt's result (the retrier is asked about it
    /// first, as about any 401 the session doesn't answer).
    case performDefaultHandling
    /// Stop: the task completes with ``HeraldError/Code/cancelled``.
    case cancelAuthenticationChallenge
    /// Decline this protection space: the 401 response is the attempt's result (the server offered no
    /// other), which the retrier is asked about first.
    case rejectProtectionSpace
}

/// The type of ``SessionManager/taskDidReceiveAuthenticationChallenge``.
public typealias TaskAuthenticationChallengeHandler =
    @Sendable (_ task: SessionTask, _ challenge: AuthenticationChallenge) -> AuthenticationDisposition

/// The type of ``SessionManager/sessionDidReceiveAuthenticationChallenge``.
public typealias SessionAuthenticationChallengeHandler =
    @Sendable (_ session: SessionManager, _ challenge: AuthenticationChallenge) -> AuthenticationDisposition

extension AuthenticationChallenge {
    /// The challenge a 401 carries for `url`: Digest preferred over Basic when a server offers both and
    /// libcurl can answer its Digest challenge (see ``isAnswerableDigest(_:)``); `nil` when `WWW-Authenticate`
    /// names neither, or only a Digest challenge libcurl can't answer.
    static func parse(_ response: HTTPResponse, url: URL) -> ProtectionSpace? {
        offeredSpaces(response, url: url).first
    }

    /// Every protection space a 401 offers for `url` that Herald can answer, in the order it prefers them: the
    /// Digest challenge libcurl can answer, then the others, each in the order the server sent them.
    ///
    /// Only the first Digest challenge counts, as libcurl answers that one and ignores the others: a later one
    /// offered here would send a credential chosen for its realm in an answer to the first (or no answer at
    /// all, when libcurl can't answer the first), and its 401 would read as a refused credential.
    static func offeredSpaces(_ response: HTTPResponse, url: URL) -> [ProtectionSpace] {
        var offered: [(AuthenticationScheme, String?)] = []
        var sawDigest = false
        for value in response.headers.values(for: "WWW-Authenticate") {
            for challenge in Self.challenges(in: value) {
                guard
                    let scheme = AuthenticationScheme.allCases.first(where: {
                        $0.rawValue.lowercased() == challenge.scheme.lowercased()
                    })
                else { continue }
                if scheme == .digest {
                    defer { sawDigest = true }
                    guard !sawDigest, isAnswerableDigest(challenge.parameters) else { continue }
                }
                offered.append((scheme, challenge.parameters["realm"]))
            }
        }
        guard let host = url.host, let urlScheme = url.scheme, let port = url.effectivePort else { return [] }
        let preferred = offered.filter { $0.0 == .digest } + offered.filter { $0.0 != .digest }
        return preferred.map { scheme, realm in
            ProtectionSpace(urlScheme: urlScheme, host: host, port: port, authenticationScheme: scheme, realm: realm)
        }
    }

    /// The digest algorithms libcurl answers (RFC 7616), in upper case: SHA-512/256 only from libcurl 8.8.0,
    /// which computes it rightly (a server offering it beside Basic then gets Basic from an older one).
    private static let digestAlgorithms = Set(
        ["MD5", "MD5-SESS", "SHA-256", "SHA-256-SESS"]
            + (CurlFeatures.answersSHA512_256Digest ? ["SHA-512-256", "SHA-512-256-SESS"] : []))

    /// Whether libcurl can answer a Digest challenge with these parameters: it has a `nonce`, an algorithm
    /// libcurl knows (MD5 when none is named), and a `qop` of `auth` when it names any (not `auth-int` alone),
    /// which a `-sess` algorithm must. libcurl sends nothing for another, and the server's 401 would read as a
    /// refused credential.
    static func isAnswerableDigest(_ parameters: [String: String]) -> Bool {
        guard let nonce = parameters["nonce"], !nonce.isEmpty else { return false }
        if let algorithm = parameters["algorithm"]?.uppercased() {
            guard digestAlgorithms.contains(algorithm) else { return false }
            // RFC 7616 defines the session variants with a qop only; libcurl refuses one without.
            if algorithm.hasSuffix("-SESS"), parameters["qop"] == nil { return false }
        }
        if let qop = parameters["qop"] {
            let options = qop.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return options.contains("auth")
        }
        return true
    }

    /// Splits one `WWW-Authenticate` value into challenges: a scheme token starts a challenge, and the
    /// parameters that follow belong to it, by lower-cased name, the first of a repeated one kept (quoted
    /// strings may contain commas).
    ///
    /// The value is scanned by Unicode scalar, as its bytes would be, not by Character: a space, comma, `=` or
    /// quote followed by a combining mark is one Character with it, yet it still separates or quotes.
    static func challenges(in value: String) -> [(scheme: String, parameters: [String: String])] {
        var result: [(scheme: String, parameters: [String: String])] = []
        let scalars = value.unicodeScalars
        var index = scalars.startIndex
        func skipSpacesAndCommas() {
            while index < scalars.endIndex, scalars[index] == " " || scalars[index] == "," || scalars[index] == "\t" {
                index = scalars.index(after: index)
            }
        }
        func token() -> String {
            let start = index
            while index < scalars.endIndex, !" \t,=".unicodeScalars.contains(scalars[index]) {
                index = scalars.index(after: index)
            }
            return String(Substring(scalars[start..<index]))
        }
        func parameterValue() -> String {
            guard index < scalars.endIndex else { return "" }
            if scalars[index] == "\"" {
                index = scalars.index(after: index)
                var text = String.UnicodeScalarView()
                while index < scalars.endIndex, scalars[index] != "\"" {
                    if scalars[index] == "\\", scalars.index(after: index) < scalars.endIndex {
                        index = scalars.index(after: index)
                    }
                    text.append(scalars[index])
                    index = scalars.index(after: index)
                }
                if index < scalars.endIndex { index = scalars.index(after: index) }
                return String(text)
            }
            return token()
        }
        while index < scalars.endIndex {
            skipSpacesAndCommas()
            let name = token()
            guard !name.isEmpty else {
                if index < scalars.endIndex { index = scalars.index(after: index) }
                continue
            }
            while index < scalars.endIndex, scalars[index] == " " || scalars[index] == "\t" {
                index = scalars.index(after: index)
            }
            if index < scalars.endIndex, scalars[index] == "=" {
                // A parameter of the current challenge.
                index = scalars.index(after: index)
                while index < scalars.endIndex, scalars[index] == " " { index = scalars.index(after: index) }
                let parameter = parameterValue()
                let key = name.lowercased()
                if !result.isEmpty, result[result.count - 1].parameters[key] == nil {
                    result[result.count - 1].parameters[key] = parameter
                }
            } else {
                result.append((scheme: name, parameters: [:]))
            }
        }
        return result
    }
}
