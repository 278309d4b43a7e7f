import Foundation
import HeraldTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A built sample executable — `activity-counter` unless another is named — run as a child process (it sits next
/// to the test bundle in the build directory; `swift build --build-tests` builds it). Both pipes are read while it runs, so a full pipe can never
/// block it; everything is awaited with a timeout, never slept for.
final class ActivityCounterProcess: Sendable {
    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        /// From the start to the exit.
        var duration: Duration
    }

    static var binary: URL? { binary(named: "activity-counter") }

    /// The built executable `name`, if it is there.
    static func binary(named name: String) -> URL? {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    private let process: Process
    private let output = Output()
    private let lines: AsyncStream<Void>
    private let linesContinuation: AsyncStream<Void>.Continuation
    private let exited: AsyncStream<Int32>
    private let started = ContinuousClock.now
    /// Kept open until the reading threads are done with them.
    private let pipes: [Pipe]

    /// Starts `executable arguments…` with `NO_COLOR=1` and `environment` added; with `shell`, through
    /// `bash -c shell`, in which `"$0" "$@"` is the command (`'"$0" "$@" 2>/dev/full'`).
    init(
        _ arguments: [String], environment extra: [String: String] = [:], stdin: Data? = nil, shell: String? = nil,
        executable: String = "activity-counter"
    ) throws {
        let binary = try #require(
            Self.binary(named: executable), "build the executable first: swift build --build-tests")
        process = Process()
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", shell, binary.path] + arguments
        } else {
            process.executableURL = binary
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        (lines, linesContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (exited, exitedContinuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingOldest(1))
        self.exited = exited
        process.terminationHandler = { exitedContinuation.yield($0.terminationStatus) }
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: stdin ?? Data())
        try input.fileHandleForWriting.close()
        for (pipe, isStdout) in [(out, true), (err, false)] {
            // A thread per pipe, reading until end of file: blocking reads see every byte and the end for sure.
            PipeReader.start(
                reading: pipe.fileHandleForReading,
                name: isStdout ? "activity-counter-stdout" : "activity-counter-stderr",
                onData: { [output, linesContinuation] data in
                    output.state.withLock { isStdout ? $0.stdout.append(data) : $0.stderr.append(data) }
                    linesContinuation.yield()
                },
                onEnd: { [output, linesContinuation] in
                    output.state.withLock { $0.openPipes -= 1 }
                    linesContinuation.yield()
                })
        }
        self.pipes = [out, err]
    }

    var pid: Int32 { process.processIdentifier }
    var stderr: String { String(decoding: output.state.withLock { $0.stderr }, as: UTF8.self) }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Returns once stderr satisfies `condition`, or throws after `timeout`.
    func waitForStderr(timeout: Duration = .seconds(30), _ condition: @Sendable @escaping (String) -> Bool) async throws
    {
        try await withTimeout(timeout, "stderr never matched; it is: \(self.stderr)") { [self] in
            if condition(stderr) { return }
            for await _ in lines where condition(stderr) { return }
        }
    }

    /// Returns once stdout satisfies `condition`, or throws after `timeout`.
    func waitForStdout(timeout: Duration = .seconds(30), _ condition: @Sendable @escaping (String) -> Bool) async throws
    {
        try await withTimeout(timeout, "stdout never matched; it is: \(self.stdout)") { [self] in
            if condition(stdout) { return }
            for await _ in lines where condition(stdout) { return }
        }
    }

    var stdout: String { String(decoding: output.state.withLock { $0.stdout }, as: UTF8.self) }

    /// Waits for the exit (failing after `timeout`) and returns what the process wrote.
    func finish(timeout: Duration = .seconds(60)) async throws -> Run {
        let status = try await withTimeout(timeout, "activity-counter did not exit; stderr: \(self.stderr)") {
            [exited] in
            for await status in exited { return status }
            return -1
        }
        let duration = ContinuousClock.now - started
        // The exit can be seen before the last bytes are read off the pipes: read what is left.
        try await withTimeout(.seconds(10), "the pipes did not close") { [self] in
            if output.state.withLock({ $0.openPipes }) == 0 { return }
            for await _ in lines where output.state.withLock({ $0.openPipes }) == 0 { return }
        }
        let (out, err) = output.state.withLock { ($0.stdout, $0.stderr) }
        return Run(
            status: status, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
            duration: duration)
    }

    /// Runs `executable arguments…` to its exit.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, shell: String? = nil,
        executable: String = "activity-counter", timeout: Duration = .seconds(60)
    ) async throws -> Run {
        try await ActivityCounterProcess(
            arguments, environment: environment, stdin: stdin, shell: shell, executable: executable
        ).finish(timeout: timeout)
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

struct TimedOut: Error, CustomStringConvertible {
    let description: String
}

/// `operation`'s result, or ``TimedOut`` after `timeout`.
func withTimeout<T: Sendable>(
    _ timeout: Duration, _ message: @autoclosure @escaping @Sendable () -> String,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TimedOut(description: message()) }
        return value
    }
}

/// What the child wrote so far, and how many of its two pipes are still open.
private final class Output: Sendable {
    let state = Mutex<(stdout: Data, stderr: Data, openPipes: Int)>((Data(), Data(), 2))
}
