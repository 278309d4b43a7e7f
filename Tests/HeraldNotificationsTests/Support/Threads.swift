import Foundation
import HeraldNotifications

/// Starts a real OS thread (not a Dispatch worker, whose pool is as small as the machine) running `body`.
func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}

/// A token holder a handler can reach before `addObserver` has returned the token.
final class TokenBox: Sendable {
    private let storage = Guarded<ObservationToken?>(nil)
    init() {}
    var token: ObservationToken? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func cancel() { storage.withLock { $0 }?.cancel() }
}
