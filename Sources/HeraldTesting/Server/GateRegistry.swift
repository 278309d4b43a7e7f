import Herald
import HeraldNotifications
import NIOCore

/// The passes of the gates that `/events/{n}?gate=K` responses wait at, granted by ``TestServer/openGate(_:)``.
///
/// Shared by every connection of one server. A gated response sends its head, then waits for a pass of its
/// gate before its first body byte: a test proves what a client does between the head and the body by
/// granting the pass only after the client did it, without timing anything. A pass granted while nobody waits
/// is kept for the next response that arrives at the gate.
final class GateRegistry: Sendable {
    private struct Gate {
        var passes = 0
        var waiting: [@Sendable () -> Void] = []
    }

    private let gates = Locked<[String: Gate]>([:])

    init() {}

    /// Waits at gate `key`: runs `pass` at once when the gate has a pass, else when one is granted.
    ///
    /// `pass` runs outside the lock, on the calling thread; it must hop to its own event loop.
    func arrive(key: String, pass: @escaping @Sendable () -> Void) {
        let passNow = gates.withLock { gates -> Bool in
            var gate = gates[key, default: Gate()]
            defer { gates[key] = gate }
            guard gate.passes > 0 else {
                gate.waiting.append(pass)
                return false
            }
            gate.passes -= 1
            return true
        }
        if passNow { pass() }
    }

    /// Grants gate `key` one pass: the longest-waiting response goes on, or the next to arrive will.
    func open(key: String) {
        let waiter = gates.withLock { gates -> (@Sendable () -> Void)? in
            var gate = gates[key, default: Gate()]
            defer { gates[key] = gate }
            guard !gate.waiting.isEmpty else {
                gate.passes += 1
                return nil
            }
            return gate.waiting.removeFirst()
        }
        waiter?()
    }
}
