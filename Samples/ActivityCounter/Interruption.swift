import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGHUP, SIGINT and SIGTERM, turned into a cancellation the run can clean up after.
///
/// The default handlers (which end the process at once) are ignored, and dispatch signal sources receive the
/// signals instead: the handler runs on a queue as ordinary Swift code, not in a signal context. The first signal
/// runs the action given to ``whenSignalled(_:)`` once; later ones change nothing: the cleanup (partial files
/// removed or kept for `--continue`, every event written) always runs to its end. It is short: the transfers
/// are cancelled, not waited for.
final class Interruption: Sendable {
    private let state = Mutex<(received: Int32?, action: (@Sendable () -> Void)?)>((nil, nil))
    private let sources: Mutex<[SignalSource]> = Mutex([])
    private let queue = DispatchQueue(label: "activity-counter.signals")

    /// The signal that arrived first, if any.
    var receivedSignal: Int32? { state.withLock { $0.received } }

    /// The exit status for ``receivedSignal``: 129 for SIGHUP, 130 for SIGINT, 143 for SIGTERM.
    var exitStatus: ExitStatus? {
        switch receivedSignal {
        case SIGHUP: .hungUp
        case SIGINT: .interrupted
        case SIGTERM: .terminated
        default: nil
        }
    }

    /// Starts watching: from now on SIGHUP, SIGINT and SIGTERM no longer end the process.
    func watch() {
        var started: [SignalSource] = []
        for number in [SIGHUP, SIGINT, SIGTERM] {
            // A signal source sees a signal only once its default action is out of the way.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak self] in self?.deliver(number) }
            source.resume()
            started.append(SignalSource(source: source))
        }
        sources.withLock { $0 = started }
    }

    /// Runs `action` once, on a private queue, when the first signal arrives, or now if it already has.
    func whenSignalled(_ action: @escaping @Sendable () -> Void) {
        let alreadyReceived = state.withLock { state -> Bool in
            guard state.received == nil else { return true }
            state.action = action
            return false
        }
        if alreadyReceived { queue.async(execute: action) }
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
