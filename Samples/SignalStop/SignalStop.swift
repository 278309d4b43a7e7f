import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGHUP, SIGINT and SIGTERM, turned into an action the program chooses (cancelling its transfers) instead of
/// the process's end, so it can clean up and report before it exits.
///
/// The signals' default actions are ignored and dispatch signal sources receive them: the action runs on a
/// queue as ordinary Swift code, not in a signal handler. The first signal runs the action given to
/// ``whenSignalled(_:)`` once; later ones change nothing, so the cleanup always runs to its end.
public final class SignalStop: Sendable {
    private let state = Mutex<(received: Int32?, action: (@Sendable () -> Void)?)>((nil, nil))
    private let sources = Mutex<[SignalSource]>([])
    private let queue = DispatchQueue(label: "herald-samples.signals")

    /// Creates a watch that is not started yet (see ``watch()``).
    public init() {}

    /// The signal that arrived first, if any.
    public var receivedSignal: Int32? { state.withLock { $0.received } }

    /// The conventional exit status for ``receivedSignal``: 128 + its number (129 for SIGHUP, 130 for SIGINT,
    /// 143 for SIGTERM); `nil` when none arrived.
    public var exitStatus: Int32? { receivedSignal.map { 128 + $0 } }

    /// Starts watching: from now on SIGHUP, SIGINT and SIGTERM no longer end the process.
    public func watch() {
        let started = [SIGHUP, SIGINT, SIGTERM].map { number in
            // A signal source sees a signal only once its default action is out of the way.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak self] in self?.deliver(number) }
            source.resume()
            return SignalSource(source: source)
        }
        sources.withLock { $0 = started }
    }

    /// Runs `action` once: on a private queue when the first signal arrives, or now if one already has.
    public func whenSignalled(_ action: @escaping @Sendable () -> Void) {
        let alreadyReceived = state.withLock { state -> Bool in
            guard state.received == nil else { return true }
            state.action = action
            return false
        }
        if alreadyReceived { action() }
    }

    private func deliver(_ number: Int32) {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.received == nil else { return nil }
            state.received = number
            defer { state.action = nil }
            return state.action
        }
        action?()
    }
}

/// Keeps a signal source alive.
///
/// Safety: a dispatch source may be resumed and cancelled from any thread; `DispatchSourceSignal` is not marked
/// `Sendable` only because it is a protocol existential.
private struct SignalSource: @unchecked Sendable {
    let source: any DispatchSourceSignal
}
