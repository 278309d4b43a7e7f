/// A user name and password for HTTP Basic or Digest authentication.
///
/// The password never appears in ``description`` or ``debugDescription``, so a credential can be logged
/// or interpolated without leaking it.
public struct Credential: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Creates a credential.
    /// - Parameters:
    ///   - user: The user name.
    ///   - password: The password.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Whether the user name or password has a control character (CR, LF, NUL, DEL…): libcurl writes both
    /// into the request as they are, where CR or LF would start a header field of its own and NUL would cut
    /// the value short. Such a credential is refused with ``HeraldError/Code/invalidRequest`` wherever it is
    /// used: answering a challenge, in a ``Proxy``.
    public var hasControlCharacter: Bool {
        (user.unicodeScalars + password.unicodeScalars).contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// `Credential(user: "alice", password: <redacted>)`.
    public var description: String { "Credential(user: \"\(user)\", password: <redacted>)" }

    /// The same as ``description``: the password is redacted.
    public var debugDescription: String { description }
}
