import Foundation
import HeraldNotifications
import HeraldTesting
import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// A child process serving on loopback for a test (tinyproxy, danted, `openssl s_server`): stdin from
/// `/dev/null`, stdout and stderr read as they arrive into ``log``; ``stop()`` kills it and awaits its exit.
final class LoopbackDaemon: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Everything the process printed, read off its pipe as it arrives.
    let log = ProcessOutput()
    private let process = SpawnedProcess()
    private let exited = OneShot<Void>()
    private let killsProcessGroup: Bool
    private let directory: URL?

    /// Runs `executable` with `arguments`.
    ///
    /// - Parameters:
    ///   - killsProcessGroup: Whether ``stop()`` kills the child's whole process group, for a daemon that
    ///     forks workers: `SpawnedProcess` starts the child as the leader of a group of its own, so its pid is the
    ///     group id of every worker it forks.
    ///   - directory: Removed by ``stop()`` (the daemon's generated configuration).
    ///   - onOutput: Called on the output's reader thread with everything printed so far, after each read.
    ///   - onExit: Called on the thread that waits for the process when it has exited, before ``stop()`` returns.
    init(
        executable: URL, arguments: [String], killsProcessGroup: Bool = false, directory: URL? = nil,
        onOutput: (@Sendable (String) -> Void)? = nil, onExit: (@Sendable () -> Void)? = nil
    ) throws {
        self.killsProcessGroup = killsProcessGroup
        self.directory = directory
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let log = log
        let exited = exited
        process.terminationHandler = { _ in
            log.finish()
            onExit?()
            exited.send(())
        }
        try process.run()
        PipeReader.start(reading: pipe.fileHandleForReading, name: "herald-test-daemon-output") { data in
            let text = log.append(data)
            onOutput?(text)
        }
    }

    /// Everything the process printed so far.
    var output: String { log.text }

    /// Waits until the process has printed `text`; throws when it exits first or `timeout` passes.
    func waitForLog(containing text: String, timeout: Duration = .seconds(20)) async throws {
        try await log.wait(for: text, timeout: timeout)
    }

    /// Kills the process (or its group), awaits its exit and removes ``directory``.
    ///
    /// SIGKILL, not `terminate()`: a daemon may handle SIGTERM by finishing its connections first, and a test
    /// is done with it. The exit is awaited through the
    /// termination handler rather than `waitUntilExit()`, which would block one of the (here two)
    /// cooperative threads and can starve the very transfers a test is waiting for.
    func stop() async throws {
        if killsProcessGroup {
            // The group outlives the main process only until this kill.
            kill(-process.processIdentifier, SIGKILL)
        } else if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        try await exited.value(timeout: .seconds(30))
        // Already reaped when the handler ran: this returns at once.
        process.waitUntilExit()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Starts a daemon listening on a free port of `127.0.0.1` and waits, up to `timeout`, until it prints
    /// `readyText`.
    ///
    /// The port is picked by the kernel and released before the daemon binds it: another process could take
    /// it in between, so a daemon that doesn't get ready is stopped and retried with a new port, three
    /// times in all.
    ///
    /// - Parameters:
    ///   - name: Names the temporary directory and the failure.
    ///   - launch: Writes the configuration for the port into the (new, empty) directory and starts the
    ///     daemon, passing it the directory to remove.
    /// - Returns: The running daemon and its port.
    static func start(
        _ name: String, readyText: String, timeout: Duration,
        launch: (_ port: Int, _ directory: URL) throws -> LoopbackDaemon
    ) async throws -> ListeningDaemon {
        var lastOutput = ""
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let daemon = try launch(port, directory)
            do {
                try await daemon.waitForLog(containing: readyText, timeout: timeout)
                return ListeningDaemon(port: port, daemon: daemon)
            } catch {
                lastOutput = daemon.output
                try? await daemon.stop()
            }
        }
        throw Failure(description: "\(name) did not start: \(lastOutput)")
    }

    /// A port on 127.0.0.1 that nothing listens on right now.
    static func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind() to 127.0.0.1:0 failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A ``LoopbackDaemon`` listening on ``port`` of 127.0.0.1, as ``LoopbackDaemon/start(_:readyText:timeout:launch:)``
/// returns it.
final class ListeningDaemon: Sendable, StoppableServer {
    let port: Int
    private let daemon: LoopbackDaemon

    fileprivate init(port: Int, daemon: LoopbackDaemon) {
        self.port = port
        self.daemon = daemon
    }

    /// Everything the daemon printed so far.
    var output: String { daemon.output }

    /// Waits until the daemon has printed `text`; throws when it exits first or `timeout` passes.
    func waitForLog(containing text: String, timeout: Duration = .seconds(20)) async throws {
        try await daemon.waitForLog(containing: text, timeout: timeout)
    }

    /// Stops the daemon (see ``LoopbackDaemon/stop()``).
    func stop() async throws {
        try await daemon.stop()
    }
}

/// A server a test starts and must stop, whatever happens.
protocol StoppableServer {
    /// Stops the server and awaits its end.
    func stop() async throws
}

extension LoopbackDaemon: StoppableServer {}

/// Runs `body` with `server` and stops it afterwards, whether `body` returns or throws.
func withRunning<Server: StoppableServer, Result>(
    _ server: Server, _ body: (Server) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(server)
    } catch {
        try? await server.stop()
        throw error
    }
    try await server.stop()
    return result
}

/// A child process's output, appended from the pipe's reader thread; waiters are resumed when a text they
/// wait for appears, or when the output ends.
final class ProcessOutput: Sendable {
    private struct State {
        var text = ""
        var isFinished = false
        var waiters: [(text: String, signal: OneShot<Bool>)] = []
    }

    private let state = Locked(State())

    var text: String { state.withLock { $0.text } }

    /// Appends `data` and returns everything printed so far.
    @discardableResult
    func append(_ data: Data) -> String {
        let (text, ready) = state.withLock { state -> (String, [OneShot<Bool>]) in
            state.text += String(decoding: data, as: UTF8.self)
            let text = state.text
            var ready: [OneShot<Bool>] = []
            state.waiters.removeAll { waiter in
                guard text.contains(waiter.text) else { return false }
                ready.append(waiter.signal)
                return true
            }
            return (text, ready)
        }
        for signal in ready { signal.send(true) }
        return text
    }

    func finish() {
        let waiting = state.withLock { state -> [OneShot<Bool>] in
            state.isFinished = true
            defer { state.waiters = [] }
            return state.waiters.map(\.signal)
        }
        for signal in waiting { signal.send(false) }
    }

    /// Waits until the output contains `text`; throws when the process ends first or `timeout` passes.
    func wait(for text: String, timeout: Duration) async throws {
        let signal = OneShot<Bool>()
        let immediate = state.withLock { state -> Bool? in
            if state.text.contains(text) { return true }
            if state.isFinished { return false }
            state.waiters.append((text, signal))
            return nil
        }
        let found: Bool
        if let immediate {
            found = immediate
        } else {
            found = try await signal.value(timeout: timeout)
        }
        guard found else {
            throw LoopbackDaemon.Failure(description: "the process ended before printing '\(text)'")
        }
    }
}
