/// The name of a notification, carrying the type of its payload.
///
/// A name fixes the type of ``TypedNotification/userInfo`` for every notification posted under it, so
/// posting the wrong payload, or reading a payload as the wrong type, is a compile-time error rather than
/// a runtime `nil`:
///
/// ```swift
/// struct Download: Sendable { var bytes: Int }
/// extension NotificationName where UserInfo == Download {
///     static let downloadDidFinish = NotificationName("example.download.finish")
/// }
/// hub.post(.downloadDidFinish, userInfo: Download(bytes: 42))   // a String here does not compile
/// ```
///
/// Two names are equal when they have the same ``rawValue`` and the same payload type. Names with the
/// same raw value but different payload types are distinct: posting under one never reaches observers of
/// the other.
public struct NotificationName<UserInfo: Sendable>: Hashable, Sendable, CustomStringConvertible {
    /// The stable string that identifies the name in logs and when bridging to string-based APIs.
    public let rawValue: String

    /// A dense, process-wide index for `(rawValue, UserInfo)`.
    ///
    /// Hubs keep their observers in arrays indexed by it, so posting never hashes a string.
    @usableFromInline let index: Int

    /// Creates a name with a stable raw value.
    ///
    /// Create names once (typically as `static let`s) and reuse them: creating a name looks up its
    /// index in a process-wide table under a lock.
    ///
    /// - Parameter rawValue: The stable string for logs and interop, for example `"herald.task.resume"`.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
        self.index = NameTable.shared.index(of: rawValue, payload: UserInfo.self)
    }

    /// The name's ``rawValue``.
    public var description: String { rawValue }

    /// Returns whether two names have the same raw value (their payload types are the same by
    /// construction).
    ///
    /// - Parameters:
    ///   - lhs: A name.
    ///   - rhs: Another name with the same payload type.
    /// - Returns: `true` when both names have the same ``rawValue``.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.index == rhs.index
    }

    /// Hashes the name.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(index)
    }
}
