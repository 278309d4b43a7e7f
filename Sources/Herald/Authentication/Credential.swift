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

    /// `Credential(user: "alice", password: <redacted>)`.
    public var description: String { "Credential(user: \"\(user)\", password: <redacted>)" }

    /// The same as ``description``: the password is redacted.
    public var debugDescription: String { description }
}
