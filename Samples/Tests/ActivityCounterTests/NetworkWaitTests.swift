import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A network namespace of the CLI's own.
enum OwnNamespace {
    /// Why the CLI can't be given a namespace of its own here (`unshare --net` refused, no `nsenter`), or `nil`.
    static let refusal: String? = {
        for tool in ["/usr/bin/unshare", "/usr/bin/nsenter"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (util-linux)"
        }
        return spawnAndWait(["/usr/bin/unshare", "--net", "true"]) == 0
            ? nil : "unshare --net is refused here (no privilege for a new network namespace)"
    }()

    /// Runs `arguments` and returns its exit status (waiting on a dispatch thread, not a cooperative one).
    static func spawnAndWait(_ arguments: [String]) -> Int32 {
        var pid: pid_t = 0
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        guard posix_spawn(&pid, arguments[0], nil, nil, &argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }
}

/// `--wait-for-network`, end to end: the CLI runs its demo in a network namespace of its own whose loopback is
/// down, as a new namespace's is. Its embedded server binds 127.0.0.1, but no route leads there: every
/// connection fails at once with "network unreachable", and nothing is sent anywhere. The test then brings that
/// namespace's loopback up (`nsenter … ip link set lo up`), which adds the route. The test's own namespace is
/// never changed.
@Suite(
    "activity-counter: --wait-for-network", .serialized,
    .enabled(
        if: OwnNamespace.refusal == nil, Comment(rawValue: "skipped: " + (OwnNamespace.refusal ?? ""))))
struct NetworkWaitTests {
    /// `exec` keeps the process id: `unshare` becomes the CLI, whose namespace is `/proc/<pid>/ns/net`.
    static let inOwnNamespace = #"exec /usr/bin/unshare --net "$0" "$@""#

    @Test("with --wait-for-network the demo says it waits for the network, then completes once a route appears")
    func waits() async throws {
        let process = try ActivityCounterProcess(
            ["demo", "--wait-for-network", "--activation-delay", "0"], shell: Self.inOwnNamespace)
        try await process.waitForStderr { $0.contains("waiting for the network") }
        let pid = process.pid
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: OwnNamespace.spawnAndWait([
                        "/usr/bin/nsenter", "--net=/proc/\(pid)/ns/net", "ip", "link", "set", "lo", "up",
                    ]))
            }
        }
        #expect(status == 0)
        let run = try await process.finish()
        #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
        #expect(run.stderr.components(separatedBy: "waiting for the network").count == 2, "said once: \(run.stderr)")
    }

    @Test("without it the demo fails at once with network errors (exit 2), saying nothing of waiting")
    func failsWithoutTheFlag() async throws {
        let run = try await ActivityCounterProcess.run(["demo", "--activation-delay", "0"], shell: Self.inOwnNamespace)
        #expect(run.status == 2, "stderr: \(run.stderr)")
        #expect(!run.stderr.contains("waiting for the network"))
        #expect(run.duration < .seconds(20))
    }
}
