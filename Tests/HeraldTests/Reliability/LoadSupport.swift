#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Herald
import HeraldTesting

/// The process's descriptor limit (`RLIMIT_NOFILE`).
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one.
    ///
    /// - Returns: The soft limit now in force.
    @discardableResult
    static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Whether this process may hold `count` descriptors, after raising its soft limit.
    static func allows(_ count: Int) -> Bool { raiseToHard() >= count }
}

/// `herald-test-server` (HeraldTesting's `TestServer` in a child process), so that the server's sockets don't
/// count against the test process's descriptor limit.
struct ChildTestServer {
    let process: Process
    let input: Pipe
    let port: Int

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The `herald-test-server` built next to the running test binary, if there is one.
    static var executable: URL? {
        guard let binary = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return nil
        }
        let url = URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("herald-test-server")
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }

    struct StartFailed: Error, CustomStringConvertible {
        let description: String
    }

    static func start(backlog: Int) throws -> ChildTestServer {
        guard let executable else { throw StartFailed(description: "herald-test-server is not built") }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--backlog", String(backlog)]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // The first line is the port; reading blocks only until the child has bound its socket.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let text = String(data: line, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw StartFailed(description: "herald-test-server printed no port")
        }
        return ChildTestServer(process: process, input: input, port: port)
    }

    /// Closes the child's stdin, which makes it shut down, and waits for it to exit.
    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// Counts down from a number of expected events and lets a test await zero with a deadline.
final class Countdown: Sendable {
    private struct State {
        var remaining: Int
        var waiter: CheckedContinuation<Bool, Never>?
        var expired = false
    }

    private let state: Locked<State>

    init(_ count: Int) { state = Locked(State(remaining: count)) }

    var remaining: Int { state.withLock { $0.remaining } }

    func countDown() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// Waits until the count reaches zero; `false` if `timeout` passed first.
    func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let done = self.state.withLock { state -> Bool in
                        if state.remaining <= 0 || state.expired { return true }
                        state.waiter = continuation
                        return false
                    }
                    if done { continuation.resume(returning: self.remaining <= 0) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first || remaining > 0 {
                // Unblock the waiting child so the group can finish.
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    state.expired = true
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: false)
            }
            group.cancelAll()
            return first
        }
    }
}

/// SplitMix64: a small deterministic generator, so a failing run can be replayed from its printed seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
