extension NotificationHub {
    /// Returns the notifications posted under `name` (by `object`, if given) as an asynchronous sequence.
    ///
    /// Observing starts immediately, before iteration begins. Each notification is buffered in the
    /// sequence on the posting thread, in post order; the iterating task receives them in that order.
    /// When the buffer is full the policy decides which notification is dropped, and
    /// ``NotificationSequence/droppedCount`` counts it.
    ///
    /// ```swift
    /// for await note in hub.notifications(named: .downloadDidFinish) {
    ///     print(note.userInfo.bytes)
    /// }
    /// ```
    ///
    /// Iteration ends when the iterating task is cancelled; the observer is then removed. Releasing the
    /// sequence without iterating it also removes the observer.
    ///
    /// - Parameters:
    ///   - name: The name to observe.
    ///   - object: The only sender to observe, or `nil` for every sender. Never kept alive (see
    ///     ``addObserver(for:object:delivery:_:)``).
    ///   - bufferingPolicy: How many notifications to buffer and which to drop when full;
    ///     `.bufferingNewest(256)` by default. Negative limits are treated as zero.
    /// - Returns: A sequence of the notifications.
    public func notifications<UserInfo: Sendable>(
        named name: NotificationName<UserInfo>,
        object: (any AnyObject & Sendable)? = nil,
        bufferingPolicy: NotificationBufferingPolicy = .bufferingNewest(256)
    ) -> NotificationSequence<UserInfo> {
        let streamPolicy: AsyncStream<TypedNotification<UserInfo>>.Continuation.BufferingPolicy
        switch bufferingPolicy {
        case .bufferingNewest(let limit): streamPolicy = .bufferingNewest(max(0, limit))
        case .bufferingOldest(let limit): streamPolicy = .bufferingOldest(max(0, limit))
        }
        let (stream, continuation) = AsyncStream.makeStream(
            of: TypedNotification<UserInfo>.self,
            bufferingPolicy: streamPolicy
        )
        let drops = DropCounter()
        let token = addObserver(for: name, object: object) { notification in
            if case .dropped = continuation.yield(notification) {
                drops.increment()
            }
        }
        // The stream calls this when its iterating task is cancelled or when the sequence and its
        // iterator are released; it also breaks the cycle observation → continuation → token. Without
        // waiting: the handler only yields, which does nothing once the stream has ended, and a wait here
        // would hold whoever cancels the task (or drops the sequence) until other threads' unrelated
        // deliveries finish — for ever, if one of them waits for that caller.
        continuation.onTermination = { _ in token.cancelWithoutWaiting() }
        return NotificationSequence(stream: stream, drops: drops)
    }
}
