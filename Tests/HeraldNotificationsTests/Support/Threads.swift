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

/// Runs `body` on a thread of its own and answers what it returned, or `nil` if it has not returned
/// within `timeout` (the thread is then left blocked, and the test goes on to fail).
///
/// For a blocking wait inside a test: a semaphore, or a token's cancel or release, which waits for a
/// delivery under way on another thread. Run on the test's own thread, such a wait blocks a thread of
/// Swift's cooperative pool, which has as many threads as the machine has cores and adds none while they
/// are blocked; with tests running in parallel on 2 cores, two such waits at once leave no thread for the
/// tasks whose next step would end them, and the whole run can hang.
func onThreadOfItsOwn<Result: Sendable>(
    named name: String = "test.blocking-wait",
    timeout: Duration = .seconds(30),
    _ body: @escaping @Sendable () -> Result
) async -> Result? {
    let returned = Recorder<Result>()
    startThread(named: name) { returned.append(body()) }
    guard await returned.wait(forCount: 1, timeout: timeout) else { return nil }
    return returned.elements.first
}
