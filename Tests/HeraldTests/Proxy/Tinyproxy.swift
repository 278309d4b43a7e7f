import Foundation
import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `tinyproxy` on a loopback port, in the foreground, with a generated configuration; its log
/// (written to stdout) is read as it arrives, so a test can await the line that shows its request.
///
/// Prefer ``withTinyproxy(credential:_:)``, which always stops it.
final class Tinyproxy: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    private let process: Process
    private let exited: OneShot<Void>
    private let log: ProcessOutput
    private let directory: URL

    private init(port: Int, process: Process, exited: OneShot<Void>, log: ProcessOutput, directory: URL) {
        self.port = port
        self.process = process
        self.exited = exited
        self.log = log
        self.directory = directory
    }

    /// Everything tinyproxy logged so far.
    var output: String { log.text }

    /// The executable `make deps` installs.
    static func executable() throws -> URL {
        for path in ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw Failure(description: "tinyproxy is not installed; run `make deps`")
    }

    /// Starts tinyproxy listening on `127.0.0.1` and waits, up to `timeout`, for its main loop.
    /// - Parameter credential: When given, the proxy demands it (`BasicAuth`).
    static func start(credential: Credential? = nil, timeout: Duration = .seconds(20)) async throws -> Tinyproxy {
        let executable = try executable()
        var lastOutput = ""
        // The port is picked by the kernel and released before tinyproxy binds it: another process could
        // take it in between, so a bind failure is retried with a new port.
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tinyproxy-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                LogLevel Info
                MaxClients 20
                Allow 127.0.0.1

                """
            if let credential { config += "BasicAuth \(credential.user) \(credential.password)\n" }
            let configFile = directory.appendingPathComponent("tinyproxy.conf")
            try Data(config.utf8).write(to: configFile)

            let process = Process()
            process.executableURL = executable
            process.arguments = ["-d", "-c", configFile.path]
            process.standardInput = FileHandle.nullDevice
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            let log = ProcessOutput()
            let exited = OneShot<Void>()
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                guard !data.isEmpty else {
                    handle.readabilityHandler = nil
                    return
                }
                log.append(data)
            }
            process.terminationHandler = { _ in
                log.finish()
                exited.send(())
            }
            try process.run()
            let proxy = Tinyproxy(port: port, process: process, exited: exited, log: log, directory: directory)
            do {
                try await log.wait(for: "Accepting connections", timeout: timeout)
                return proxy
            } catch {
                lastOutput = log.text
                try? await proxy.stop()
            }
        }
        throw Failure(description: "tinyproxy did not start: \(lastOutput)")
    }

    /// Waits until tinyproxy has logged a line containing `text`.
    func waitForLog(containing text: String, timeout: Duration = .seconds(20)) async throws {
        try await log.wait(for: text, timeout: timeout)
    }

    /// Kills tinyproxy (SIGKILL: a child spawned from a dispatch worker inherits a mask blocking SIGTERM),
    /// awaits its exit and removes its configuration.
    func stop() async throws {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try await exited.value(timeout: .seconds(30))
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
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

/// Runs `body` with a running ``Tinyproxy`` and stops it afterwards, whether `body` returns or throws.
func withTinyproxy<Result>(
    credential: Credential? = nil, _ body: (Tinyproxy) async throws -> Result
) async throws -> Result {
    let proxy = try await Tinyproxy.start(credential: credential)
    let result: Result
    do {
        result = try await body(proxy)
    } catch {
        try? await proxy.stop()
        throw error
    }
    try await proxy.stop()
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

    func append(_ data: Data) {
        let ready = state.withLock { state -> [OneShot<Bool>] in
            state.text += String(decoding: data, as: UTF8.self)
            let text = state.text
            var ready: [OneShot<Bool>] = []
            state.waiters.removeAll { waiter in
                guard text.contains(waiter.text) else { return false }
                ready.append(waiter.signal)
                return true
            }
            return ready
        }
        for signal in ready { signal.send(true) }
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
        guard found else { throw Tinyproxy.Failure(description: "the process ended before printing '\(text)'") }
    }
}
