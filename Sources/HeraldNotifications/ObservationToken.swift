/// Keeps an observation alive; cancelling or releasing it removes the observer.
///
/// Returned by ``NotificationHub/addObserver(for:object:delivery:_:)``. Keep a strong reference for as
/// long as you want notifications: when the last reference goes away the observer is removed, as if
/// ``cancel()`` had been called.
///
/// The token owns the handler: the hub keeps no reference to a removed observer, so the handler and
/// everything it captures are released with the last reference to the token — not when it is cancelled. A
/// handler that captures the object holding its own token (a one-shot observer that cancels itself, a plug-in
/// that keeps its registration) forms a cycle: drop the token after cancelling it (`token = nil`).
///
/// Tokens are compared by identity.
public final class ObservationToken: Sendable, Hashable {
    private enum Target: Sendable {
        case observation(any AnyObservation, NotificationHub)
        case tokens([ObservationToken])
        case action(Locked<(@Sendable () -> Void)?>)
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

    /// A token that runs `onCancel` once, when cancelled or released.
    package init(onCancel: @escaping @Sendable () -> Void) {
        self.target = .action(Locked(onCancel))
    }

    deinit {
        // A token cancelled before kept its promise then (or, cancelled by ``cancelWithoutWaiting()``, was
        // never asked to): releasing it waits for nothing more.
        if !isCancelled { cancel() }
    }

    /// Removes the observer (or, for a combined token, every observer it stands for).
    ///
    /// After `cancel()` returns the handler is not entered again, on any thread; a call already running
    /// may finish, and a `.queue` observer's pending notifications are discarded. To keep that promise it
    /// waits, when another thread may be about to enter the handler: for a `.posting` observer, until
    /// the posts being delivered on other threads at the time have finished their pass — every post of the
    /// hub, whatever its name, so a handler of another observer that is running counts too; for a `.queue`
    /// observer, until the handler call under way returns. Don't call it while holding a lock, or on a
    /// thread, that a handler of the hub may be waiting for (a handler that calls `DispatchQueue.main.sync`,
    /// and a token released on the main thread; a handler that waits for a session's completion queue, and a
    /// token released in a completion handler), whoever's handler it is.
    ///
    /// Called from inside a handler (of any hub), it does not wait for other threads — two handlers
    /// cancelling each other's tokens would wait for each other forever — so the promise there covers
    /// this thread and every post that starts after it returns. Cancelling a handler's own token from
    /// inside it never deadlocks.
    ///
    /// Safe to call from any thread and any number of times: later calls only wait as the first did.
    public func cancel() {
        switch target {
        case .observation(let observation, let hub):
            if observation.markCancelled() {
                hub.remove(observation)
            }
            // Also on a later call: a second `cancel()` that returns must promise the same as the first.
            hub.waitUntilNotEntered(observation)
        case .tokens(let tokens):
            for token in tokens { token.cancel() }
        case .action(let action):
            let onCancel = action.withLock { action in
                defer { action = nil }
                return action
            }
            onCancel?()
        }
    }

    /// Removes the observer without waiting for other threads that may be about to enter its handler: for an
    /// observer whose handler does nothing harmful once its observation is over (an async sequence's, which
    /// only yields to a finished stream), so that ending it never blocks the caller on unrelated deliveries.
    package func cancelWithoutWaiting() {
        switch target {
        case .observation(let observation, let hub):
            if observation.markCancelled() { hub.remove(observation) }
        case .tokens(let tokens):
            for token in tokens { token.cancelWithoutWaiting() }
        case .action:
            cancel()
        }
    }

    /// Whether ``cancel()`` has been called (for a combined token: whether all its tokens are
    /// cancelled).
    public var isCancelled: Bool {
        switch target {
        case .observation(let observation, _): observation.isCancelled
        case .tokens(let tokens): tokens.allSatisfy(\.isCancelled)
        case .action(let action): action.withLock { $0 == nil }
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
