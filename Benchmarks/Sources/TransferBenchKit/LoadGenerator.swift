import Foundation
import Synchronization

/// What one measured run produced.
public struct LoadOutcome: Sendable {
    public var completed: Int
    public var failures: Int
    public var seconds: Double
    /// User plus system CPU time of the whole process (every thread, getrusage(RUSAGE_SELF)) over the
    /// measured phase alone, in microseconds, when the client measured it.
    public var cpuMicroseconds: Int? = nil
}

/// User plus system CPU time the process has used so far, every thread's, in microseconds.
public func processCPUMicroseconds() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + usage.ru_utime.tv_usec
        + usage.ru_stime.tv_usec
}

/// Keeps `concurrency` requests in flight until `total` have completed.
///
/// `start` issues one request and must call `finished(ok:)` exactly once when it completes, from any
/// thread. Each completion starts the next request, so the client's own completion path is what
/// is measured.
public final class LoadGenerator: Sendable {
    private struct Counts {
        var started = 0
        var completed = 0
        var failures = 0
        var firstErrors: [String] = []
    }

    public let total: Int
    public let concurrency: Int
    private let counts = Mutex(Counts())
    private let done = DispatchSemaphore(value: 0)
    private let start: @Sendable (LoadGenerator) -> Void

    public init(total: Int, concurrency: Int, start: @escaping @Sendable (LoadGenerator) -> Void) {
        self.total = total
        self.concurrency = concurrency
        self.start = start
    }

    /// Starts the first `concurrency` requests and blocks until all `total` have completed.
    public func run() -> LoadOutcome {
        let begin = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<min(concurrency, total) { startNext() }
        return awaitOutcome(since: begin)
    }

    /// Records one completed request; `failure` describes what was wrong with it, if anything.
    public func finished(failure: String?) {
        let allDone = counts.withLock { counts in
            counts.completed += 1
            if let failure {
                counts.failures += 1
                if counts.firstErrors.count < 5 { counts.firstErrors.append(failure) }
            }
            return counts.completed == total
        }
        if allDone {
            done.signal()
        } else {
            startNext()
        }
    }

    /// Runs `concurrency` Swift tasks, each awaiting `request` (which answers what was wrong with the response,
    /// if anything) and then the next, until `total` have completed; blocks until they have. `start` is unused.
    public func runAsync(_ request: @escaping @Sendable () async -> String?) -> LoadOutcome {
        let begin = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<min(concurrency, total) {
            Task {
                while claim() {
                    let failure = await request()
                    if record(failure: failure) { done.signal() }
                }
            }
        }
        return awaitOutcome(since: begin)
    }

    /// Blocks until every request has completed; then reports the first errors and the counts since `begin`.
    private func awaitOutcome(since begin: UInt64) -> LoadOutcome {
        done.wait()
        let end = DispatchTime.now().uptimeNanoseconds
        return counts.withLock { counts in
            for message in counts.firstErrors {
                FileHandle.standardError.write(Data("request failed: \(message)\n".utf8))
            }
            return LoadOutcome(
                completed: counts.completed, failures: counts.failures, seconds: Double(end - begin) / 1e9)
        }
    }

    /// Takes the right to start one more request; `false` once `total` were started.
    private func claim() -> Bool {
        counts.withLock { counts in
            guard counts.started < total else { return false }
            counts.started += 1
            return true
        }
    }

    /// Records one completed request; `true` for the last one.
    private func record(failure: String?) -> Bool {
        counts.withLock { counts in
            counts.completed += 1
            if let failure {
                counts.failures += 1
                if counts.firstErrors.count < 5 { counts.firstErrors.append(failure) }
            }
            return counts.completed == total
        }
    }

    private func startNext() {
        let shouldStart = counts.withLock { counts in
            guard counts.started < total else { return false }
            counts.started += 1
            return true
        }
        if shouldStart { start(self) }
    }
}
