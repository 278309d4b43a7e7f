import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGINT and SIGTERM, turned into a cancellation the run can clean up after.
///
/// The default handlers (which end the process at once) are ignored, and dispatch signal sources receive the
/// signals instead: the handler runs on a queue as ordinary Swift code, not in a signal context. The first signal
/// calls `onSignal` once; a second one ends the process at once with the same status, for a user who does not
/// want to wait for the cleanup.
final class Interruption: Sendable {
    private let received = Mutex<Int32?>(nil)
    private let sources: Mutex<[SignalSource]> = Mutex([])
    private let queue = DispatchQueue(label: "activity-counter.signals")

    /// The signal that arrived first, if any.
    var receivedSignal: Int32? { received.withLock { $0 } }

    /// The exit status for ``receivedSignal``: 130 for SIGINT, 143 for SIGTERM.
    var exitStatus: ExitStatus? {
        switch receivedSignal {
        case SIGINT: .interrupted
        case SIGTERM: .terminated
        default: nil
        }
    }

    /// Starts watching; `onSignal` runs once, on a private queue, when the first signal arrives.
    func watch(onSignal: @escaping @Sendable (Int32) -> Void) {
        var started: [SignalSource] = []
        for number in [SIGINT, SIGTERM] {
            // A signal source sees a signal only once its default action is out of the way.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak self] in self?.deliver(number, onSignal: onSignal) }
            source.resume()
            started.append(SignalSource(source: source))
        }
        sources.withLock { $0 = started }
    }

    private func deliver(_ number: Int32, onSignal: @Sendable (Int32) -> Void) {
        let first = received.withLock { received -> Bool in
            guard received == nil else { return false }
            received = number
            return true
        }
        guard first else {
            exit(128 + (receivedSignal ?? number))
        }
        onSignal(number)
    }
}

/// Keeps a signal source alive.
///
/// Safety: a dispatch source may be resumed and cancelled from any thread; `DispatchSourceSignal` is not marked
/// `Sendable` only because it is a protocol existential.
private struct SignalSource: @unchecked Sendable {
    let source: any DispatchSourceSignal
}
