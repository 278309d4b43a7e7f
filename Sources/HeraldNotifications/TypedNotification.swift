/// A notification as an observer receives it: its name, its sender and its typed payload.
public struct TypedNotification<UserInfo: Sendable>: Sendable {
    /// The name the notification was posted under.
    public let name: NotificationName<UserInfo>

    /// The object that posted the notification (for Herald, a task or a session), if any.
    public let object: (any AnyObject & Sendable)?

    /// The payload, typed by the name.
    public let userInfo: UserInfo

    /// Creates a notification, for example to call an observer's handler directly in a unit test.
    ///
    /// Observers normally receive notifications from ``NotificationHub/post(_:object:userInfo:)``.
    ///
    /// - Parameters:
    ///   - name: The notification's name.
    ///   - object: The sender, or `nil`.
    ///   - userInfo: The payload.
    @inlinable
    public init(name: NotificationName<UserInfo>, object: (any AnyObject & Sendable)? = nil, userInfo: UserInfo) {
        self.name = name
        self.object = object
        self.userInfo = userInfo
    }
}
