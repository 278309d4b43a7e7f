import Dispatch
import Synchronization

/// A typed notification center: observers register handlers for names, posters post typed payloads.
///
/// ```swift
/// let hub = NotificationHub()
/// let token = hub.addObserver(for: .downloadDidFinish) { note in
///     print(note.userInfo.bytes)
/// }
/// hub.post(.downloadDidFinish, userInfo: Download(bytes: 42))
/// ```
///
/// A hub is safe to use from any thread. Handlers never run while the hub holds a lock, so a handler may
/// post, add observers and cancel tokens (its own included). See <doc:DeliveryAndOrdering> for the
/// guarantees.
///
/// Not to be confused with Foundation's `NotificationCenter`: names here carry their payload type, and
/// delivery to a name nobody observes costs one atomic load.
public final class NotificationHub: Sendable {
    /// The process-wide hub, used by Herald's sessions unless they are given their own.
    public static let shared = NotificationHub()

    let registry = Locked(Registry())
    /// Serial queues that observers built on `.posting` handlers forward notifications to; drains wait for
    /// them too (see `drainAlso(_:)`).
    let forwardingQueues = Locked([UInt64: DispatchQueue]())
    @usableFromInline let observedNames = ObservedNames()
    /// Bumped after every registry change; posting threads compare it with the version of the snapshot
    /// they cached.
    @usableFromInline let version = Atomic<UInt64>(0)
    /// Unique for the life of the process (unlike an address), so a thread's cache never confuses a new
    /// hub with a dead one.
    @usableFromInline let id = NotificationHub.makeID()

    private static let nextID = Atomic<UInt64>(0)
    private static func makeID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }

    /// Creates an empty hub, independent of ``shared``.
    public init() {}

    /// Registers a handler for notifications with the given name.
    ///
    /// The handler runs for every notification posted under `name` (by `object`, if given) after this
    /// method returns, until the returned token is cancelled or released:
    ///
    /// - With ``NotificationDelivery/posting`` it runs synchronously on the posting thread, inside
    ///   ``post(_:object:userInfo:)``. A notification posted from inside a handler is delivered after
    ///   the current one has reached all its observers.
    /// - With ``NotificationDelivery/queue(_:)`` it runs on the queue, one notification at a time, in
    ///   the order the notifications were posted to this observer.
    ///
    /// Observers of one name are called in registration order. After ``ObservationToken/cancel()``
    /// returns, the handler is not entered again; a call already running on another thread may finish.
    ///
    /// - Parameters:
    ///   - name: The name to observe.
    ///   - object: The only sender to observe, or `nil` to observe every sender. Observing an object
    ///     never keeps it alive: its deinit runs when its last strong reference goes. Until the token is
    ///     released (cancelling it is not enough: a kept token keeps its observation), the observation keeps
    ///     only the dead object's memory (its instance size) allocated, so that no new object can take its
    ///     address and be mistaken for it.
    ///   - delivery: Where the handler runs; ``NotificationDelivery/posting`` by default.
    ///   - handler: The closure to call with each notification.
    /// - Returns: A token that removes the observer when cancelled or released. Keep it for as long as
    ///   you want notifications.
    public func addObserver<UserInfo: Sendable>(
        for name: NotificationName<UserInfo>,
        object: (any AnyObject & Sendable)? = nil,
        delivery: NotificationDelivery = .posting,
        _ handler: @escaping @Sendable (TypedNotification<UserInfo>) -> Void
    ) -> ObservationToken {
        let (observation, garbage) = registry.withLock { registry in
            let observation = Observation(
                sequenceNumber: registry.makeSequenceNumber(),
                nameIndex: name.index,
                sender: object,
                delivery: delivery,
                handler: handler
            )
            let (nameIsNewlyObserved, garbage) = registry.insert(observation)
            let cached = registryDidChange(
                registry, nameIndex: name.index, isObserved: nameIsNewlyObserved ? true : nil)
            return (observation, (garbage, cached))
        }
        // The invalidated snapshots, released outside the lock.
        for snapshot in garbage.1 { snapshot.release() }
        return ObservationToken(observation: observation, hub: self)
    }

    /// Posts a notification to the observers of `name`.
    ///
    /// Observers with ``NotificationDelivery/posting`` run before this method returns, on the calling
    /// thread, in registration order; `.queue` observers are handed the notification in the same pass.
    /// When called from inside a `.posting` handler, the notification is delivered after the current one
    /// has reached all its observers, and before the outermost `post` returns.
    ///
    /// When nobody observes `name`, this costs one atomic load and `userInfo` is never evaluated.
    ///
    /// - Parameters:
    ///   - name: The notification's name, which fixes the payload type.
    ///   - object: The sender. Observers that filter by sender receive the notification only when this
    ///     is the very object they observe (`===`).
    ///   - userInfo: The payload; evaluated once, and only if someone observes `name`.
    @inlinable
    public func post<UserInfo: Sendable>(
        _ name: NotificationName<UserInfo>,
        object: (any AnyObject & Sendable)? = nil,
        userInfo: @autoclosure () -> UserInfo
    ) {
        guard observedNames.mayContain(name.index) else { return }
        let notification = TypedNotification(name: name, object: object, userInfo: userInfo())
        PostingThread.post(
            to: self,
            { deliver(notification, from: $0) },
            deferred: { { self.deliver(notification, from: $0) } }
        )
    }

    /// Returns whether any observer is registered for `name`.
    ///
    /// Lock-free when the answer is `false` (the common case for names nobody observes). Use it to skip
    /// work that only serves observers beyond building the payload, which
    /// ``post(_:object:userInfo:)`` already skips.
    ///
    /// - Parameter name: The name to check.
    /// - Returns: `true` if at least one observation of `name` (with or without a sender filter) is
    ///   registered.
    @inlinable
    public func hasObservers<UserInfo: Sendable>(for name: NotificationName<UserInfo>) -> Bool {
        observedNames.mayContain(name.index) && registeredObservers(nameIndex: name.index)
    }

    @usableFromInline
    func registeredObservers(nameIndex: Int) -> Bool {
        registry.withLock { $0.hasObservers(nameIndex: nameIndex) }
    }
}
