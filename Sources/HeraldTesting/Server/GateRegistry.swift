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
        var waiting: [(id: Int, pass: @Sendable () -> Void)] = []
    }

    private let gates = Locked<(byKey: [String: Gate], lastID: Int)>(([:], 0))

    init() {}

    /// Waits at gate `key`: runs `pass` at once when the gate has a pass, else when one is granted.
    ///
    /// `pass` runs outside the lock, on the calling thread; it must hop to its own event loop.
    /// - Returns: The waiter's ID for ``leave(key:id:)``; `nil` when `pass` ran at once.
    @discardableResult
    func arrive(key: String, pass: @escaping @Sendable () -> Void) -> Int? {
        let id = gates.withLock { gates -> Int? in
            var gate = gates.byKey[key, default: Gate()]
            defer { gates.byKey[key] = gate }
            guard gate.passes > 0 else {
                gates.lastID += 1
                gate.waiting.append((gates.lastID, pass))
                return gates.lastID
            }
            gate.passes -= 1
            return nil
        }
        if id == nil { pass() }
        return id
    }

    /// Stops waiting at gate `key` (the response's connection went away), so that no pass is spent on it.
    func leave(key: String, id: Int) {
        gates.withLock { gates in gates.byKey[key]?.waiting.removeAll { $0.id == id } }
    }

    /// Grants gate `key` one pass: the longest-waiting response goes on, or the next to arrive will.
    func open(key: String) {
        let waiter = gates.withLock { gates -> (@Sendable () -> Void)? in
            var gate = gates.byKey[key, default: Gate()]
            defer { gates.byKey[key] = gate }
            guard !gate.waiting.isEmpty else {
                gate.passes += 1
                return nil
            }
            return gate.waiting.removeFirst().pass
        }
        waiter?()
    }
}
