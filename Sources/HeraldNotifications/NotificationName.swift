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
    public var rawValue: String { entry.rawValue }

    /// A dense, process-wide index for `(rawValue, UserInfo)`.
    ///
    /// Hubs keep their observers in arrays indexed by it, so posting never hashes a string.
    @usableFromInline let index: Int

    /// Where the raw value is kept. Safety: the process-wide name table never frees an entry, so a name
    /// refers to it unretained, and copying a name (every post copies it into the notification) costs no
    /// reference counting.
    private unowned(unsafe) let entry: NameTable.Entry

    /// Creates a name with a stable raw value.
    ///
    /// Create names once (typically as `static let`s) and reuse them: creating a name looks up its
    /// index in a process-wide table under a lock.
    ///
    /// - Parameter rawValue: The stable string for logs and interop, for example `"herald.task.resume"`.
    public init(_ rawValue: String) {
        let entry = NameTable.shared.entry(of: rawValue, payload: UserInfo.self)
        self.entry = entry
        self.index = entry.index
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
