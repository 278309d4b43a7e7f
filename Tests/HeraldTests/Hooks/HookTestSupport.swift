import Dispatch
import Foundation
import HeraldNotifications
@testable import Herald

/// Records hook calls and completion-handler calls in the order they happened, across queues.
final class OrderedLog: Sendable {
    private let entries = Locked<[String]>([])

    func append(_ entry: String) { entries.withLock { $0.append(entry) } }

    var all: [String] { entries.withLock { $0 } }
}

/// Collects values handed to a hook.
final class Collected<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }
}

extension SessionManager {
    /// Waits until everything queued on the completion queue before this call has run.
    func completionQueueBarrier() async {
        await withCheckedContinuation { continuation in completionQueue.async { continuation.resume() } }
    }
}
