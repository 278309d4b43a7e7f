import Foundation
import HeraldNotifications

@testable import Herald
@testable import HeraldEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The network namespace the reachability tests change: links, addresses and routes added and removed with
/// iproute2's `ip`, in a namespace of the test process's own, never the machine's.
///
/// `make test` runs the suites that use it in a process of their own under `.ci/loopback-only` (a new network
/// namespace whose only interface is loopback) with `HERALD_NETNS_TESTS=1`. Anywhere else the tests are
/// skipped, with ``unavailableReason`` saying why: in the machine's namespace they would take its network
/// down, and beside other suites in one process they would take loopback away from those suites' servers.
enum NetworkNamespace {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Why the namespace tests can't run here; `nil` when they can.
    static let unavailableReason: String? = {
        guard ProcessInfo.processInfo.environment["HERALD_NETNS_TESTS"] == "1" else {
            return "they change links, addresses and routes, so they run only as make test runs them: alone in "
                + "a process under .ci/loopback-only, with HERALD_NETNS_TESTS=1"
        }
        // `.ci/loopback-only` names the namespace it made; being in that one shows this is not the machine's.
        let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
        let made = ProcessInfo.processInfo.environment["HERALD_LOOPBACK_ONLY_NETNS"]
        guard let own, let made, own == made else {
            return "this process is not in the network namespace .ci/loopback-only makes (it is in \(own ?? "?"); "
                + "loopback-only made \(made ?? "none")): the machine refused a namespace, or the tests run without it"
        }
        guard (try? ipExecutable()) != nil else { return "iproute2's ip is not installed (make deps installs it)" }
        return nil
    }()

    /// `ip` on `PATH` or in the usual places.
    static func ipExecutable() throws -> URL {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("ip")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw Failure(description: "iproute2's ip is not on PATH")
    }

    /// Runs each of `commands` (`ip` arguments, such as `"link set lo up"`) in one `ip -batch` process, in
    /// order, and awaits its exit; throws with its output when one fails.
    static func ip(_ commands: String..., timeout: Duration = .seconds(20)) async throws {
        try await ip(contentsOf: commands, timeout: timeout)
    }

    /// ``ip(_:timeout:)`` with the commands in an array.
    /// With `force`, `ip` carries out every command even after one fails (and still exits with an error).
    ///
    /// The child is spawned and reaped here (`posix_spawn`, then `waitpid` on a dispatch thread, never a
    /// cooperative one) rather than through Foundation's `Process`, whose reaping missed the exit of an `ip`
    /// run right after loopback came back up: the child stayed a zombie and its termination handler never ran.
    static func ip(contentsOf commands: [String], force: Bool = false, timeout: Duration = .seconds(20)) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let batch = directory.appendingPathComponent("commands")
        let log = directory.appendingPathComponent("output")
        try Data((commands.joined(separator: "\n") + "\n").utf8).write(to: batch)
        let arguments = [try ipExecutable().path] + (force ? ["-force"] : []) + ["-batch", batch.path]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ)
        guard spawned == 0 else { throw Failure(description: "could not start ip: errno \(spawned)") }
        let exited = OneShot<Int32>()
        let child = pid
        DispatchQueue.global().async {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            exited.send(status)
        }
        let status: Int32
        do {
            status = try await exited.value(timeout: timeout)
        } catch {
            kill(pid, SIGKILL)
            throw Failure(description: "ip \(commands) did not finish within \(timeout)")
        }
        guard status == 0 else {
            let printed = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw Failure(description: "ip \(commands) exited with status \(status): \(printed)")
        }
    }

    /// The CPU time this process has used, in seconds.
    static func processCPUSeconds() -> Double {
        seconds(usage(of: __rusage_who_t(RUSAGE_SELF.rawValue)))
    }

    /// The CPU time `engine`'s loop thread has used, in seconds, read on that thread (`RUSAGE_THREAD`).
    static func loopThreadCPUSeconds(of engine: Engine) async -> Double {
        await withCheckedContinuation { continuation in
            engine.execute { continuation.resume(returning: seconds(usage(of: __rusage_who_t(1)))) }  // RUSAGE_THREAD
        }
    }

    private static func usage(of who: __rusage_who_t) -> rusage {
        var usage = rusage()
        getrusage(who, &usage)
        return usage
    }

    private static func seconds(_ usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }
}

/// Values appended from any thread, awaited by count with a timeout.
final class EventLog<Value: Sendable>: Sendable {
    struct TimedOut: Error, CustomStringConvertible {
        let description: String
    }

    private struct Waiter {
        let id: Int
        let count: Int
        let continuation: CheckedContinuation<[Value], any Error>
    }

    private struct State {
        var values: [Value] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Locked(State())

    var values: [Value] { state.withLock { $0.values } }

    func append(_ value: Value) {
        let ready = state.withLock { state -> [(CheckedContinuation<[Value], any Error>, [Value])] in
            state.values.append(value)
            let values = state.values
            var ready: [(CheckedContinuation<[Value], any Error>, [Value])] = []
            state.waiters.removeAll { waiter in
                guard values.count >= waiter.count else { return false }
                ready.append((waiter.continuation, values))
                return true
            }
            return ready
        }
        for (continuation, values) in ready { continuation.resume(returning: values) }
    }

    /// Waits until at least `count` values were appended and returns them all; throws ``TimedOut`` when
    /// `timeout` passes first.
    @discardableResult
    func wait(forCount count: Int, timeout: Duration = .seconds(10)) async throws -> [Value] {
        try await withCheckedThrowingContinuation { continuation in
            let (id, ready) = state.withLock { state -> (Int, [Value]?) in
                state.nextID += 1
                if state.values.count >= count { return (state.nextID, state.values) }
                state.waiters.append(Waiter(id: state.nextID, count: count, continuation: continuation))
                return (state.nextID, nil)
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(id, count: count)
            }
        }
    }

    private func expire(_ id: Int, count: Int) {
        let expired = state.withLock { state -> (CheckedContinuation<[Value], any Error>, Int)? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return (state.waiters.remove(at: index).continuation, state.values.count)
        }
        if let (continuation, had) = expired {
            continuation.resume(throwing: TimedOut(description: "waited for \(count) events, had \(had)"))
        }
    }
}
