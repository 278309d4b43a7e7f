/// Keeps an observation alive; cancelling or releasing it removes the observer.
///
/// Returned by ``NotificationHub/addObserver(for:object:delivery:_:)``. Keep a strong reference for as
/// long as you want notifications: when the last reference goes away the observer is removed, as if
/// ``cancel()`` had been called.
///
/// The token owns the handler: the hub keeps no reference to a removed observer, so the handler and
/// everything it captures are released with the last reference to the token.
///
/// Tokens are compared by identity.
public final class ObservationToken: Sendable, Hashable {
    private enum Target: Sendable {
        case observation(any AnyObservation, NotificationHub)
        case tokens([ObservationToken])
    }

    private let target: Target

    init(observation: any AnyObservation, hub: NotificationHub) {
        self.target = .observation(observation, hub)
    }

    /// Creates a token that stands for several others: cancelling or releasing it cancels all of them.
    ///
    /// Use it to register a group of observers (for example one per lifecycle notification of a plug-in
    /// observer) and hand back a single token.
    ///
    /// - Parameter tokens: The tokens to combine. The new token keeps them alive.
    public init(combining tokens: [ObservationToken]) {
        self.target = .tokens(tokens)
    }

    deinit {
        cancel()
    }

    /// Removes the observer (or, for a combined token, every observer it stands for).
    ///
    /// After `cancel()` returns the handler is not entered again; a call already running on another
    /// thread may finish, and a `.queue` observer's pending notifications are discarded. Safe to call
    /// from any thread, from inside the handler itself, and any number of times: later calls do nothing.
    public func cancel() {
        switch target {
        case .observation(let observation, let hub):
            if observation.markCancelled() {
                hub.remove(observation)
            }
        case .tokens(let tokens):
            for token in tokens { token.cancel() }
        }
    }

    /// Whether ``cancel()`` has been called (for a combined token: whether all its tokens are
    /// cancelled).
    public var isCancelled: Bool {
        switch target {
        case .observation(let observation, _): observation.isCancelled
        case .tokens(let tokens): tokens.allSatisfy(\.isCancelled)
        }
    }

    /// Returns whether two tokens are the same object.
    ///
    /// - Parameters:
    ///   - lhs: A token.
    ///   - rhs: Another token.
    /// - Returns: `lhs === rhs`.
    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool {
        lhs === rhs
    }

    /// Hashes the token's identity.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
