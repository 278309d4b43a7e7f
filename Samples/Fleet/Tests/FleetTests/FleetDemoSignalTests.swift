import FleetHarness
import Foundation
import Testing

/// `fleet-demo` stopped by a signal: whenever SIGINT, SIGTERM or SIGHUP arrives — while the fleet starts, or while it is
/// kept up — the demo stops every program it started, removes the fleet's folder and exits 0.
///
/// Each run gets a temporary folder of its own as `TMPDIR`, where the demo makes the fleet's folder; afterwards
/// the folder must be empty and no process may hold a file in it open, have it as its working directory or name
/// it on its command line (Prometheus is given its configuration and its data there).
@Suite("fleet-demo and signals", .serialized)
struct FleetDemoSignalTests {
    @Test(
        "SIGINT, or SIGHUP (a closed terminal), while the fleet is kept up: the fleet stops, its folder goes, exit 0",
        arguments: [SIGINT, SIGHUP])
    func interruptWhileKeptUp(signal: Int32) async throws {
        let run = try await DemoRun.run(signal: signal, once: .printed("The fleet stays up until Ctrl-C"))
        #expect(run.status == 0, "stdout: \(run.output) stderr: \(run.error)")
        // Before, SIGHUP killed the demo at once, and Prometheus (which takes a SIGHUP as "reload") and its
        // folder outlived it.
        #expect(run.output.contains("Received signal \(signal)."), "\(run.output)")
        #expect(run.output.contains("Stopped."), "\(run.output)")
        #expect(run.leftovers.isEmpty, "left behind: \(run.leftovers)")
    }

    @Test("SIGTERM while the fleet starts, service B up and A starting: what was started stops, exit 0")
    func terminateWhileStarting() async throws {
        // Service A's log appears when it is started, after the receiver and service B are listening.
        let run = try await DemoRun.run(signal: SIGTERM, once: .started("service-a"))
        #expect(run.startedBeforeSignal.contains("service-b.log"), "\(run.startedBeforeSignal)")
        #expect(run.status == 0, "stdout: \(run.output) stderr: \(run.error)")
        #expect(run.output.contains("Received signal \(SIGTERM)."), "\(run.output)")
        #expect(run.leftovers.isEmpty, "left behind: \(run.leftovers)")
    }

    @Test("a FLEET_DEMO_SECONDS past a year is refused before anything starts: a message and exit 1, not a trap")
    func keepSecondsTooLong() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "fleet-demo-keep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = DemoRun.process(keepSeconds: String(Int.max), temporaryFolder: folder)
        let error = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { continuation.yield($0.terminationStatus) }
        try process.run()
        // It refuses at once; killed after a minute if it doesn't, which fails the test.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        let message = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        var statuses = exited.makeAsyncIterator()
        let status = await statuses.next()
        watchdog.cancel()
        // Before, the fleet started and the demo trapped in its first sleep, leaving every program running.
        #expect(status == 1, "\(message)")
        #expect(message.contains("FLEET_DEMO_SECONDS"), "\(message)")
        #expect(DemoRun.fleetFiles(in: folder).isEmpty)
    }
}

/// A value shared between the test and the tasks that watch the demo.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // Safety: `value` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }

    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

/// One run of `fleet-demo` (built beside `fleet-service`) kept up until a signal.
struct DemoRun {
    var status: Int32
    var output: String
    var error: String
    /// What the run left behind: entries of its `TMPDIR`, and processes that still use it.
    var leftovers: [String]
    /// The files in the fleet's folder when the signal was sent.
    var startedBeforeSignal: [String]

    /// When the signal is sent.
    enum Moment {
        /// Once the demo's standard output contains the text.
        case printed(String)
        /// Once the fleet's folder has the log of the named program: it has just been started.
        case started(String)
    }

    /// `fleet-demo` (built beside `fleet-service`), not started, with `FLEET_DEMO_SECONDS` and `TMPDIR` set.
    static func process(keepSeconds: String, temporaryFolder folder: URL) -> Process {
        let process = Process()
        process.executableURL = Fleet.Locations.checkout.service.deletingLastPathComponent().appending(
            path: "fleet-demo")
        process.environment = ProcessInfo.processInfo.environment.merging([
            "FLEET_DEMO_SECONDS": keepSeconds, "TMPDIR": folder.path,
        ]) { $1 }
        return process
    }

    /// Runs the demo with `FLEET_DEMO_SECONDS=0` and a `TMPDIR` of its own, sends it `signal` at `moment`, and
    /// waits for it to exit; the demo is killed after three minutes.
    static func run(signal number: Int32, once moment: Moment) async throws -> DemoRun {
        let folder = FileManager.default.temporaryDirectory.appending(path: "fleet-demo-signal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = process(keepSeconds: "0", temporaryFolder: folder)
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let startedBeforeSignal = Locked<[String]>([])
        let signal: @Sendable () -> Void = {
            startedBeforeSignal.set(fleetFiles(in: folder))
            kill(pid, number)
        }
        let watching = Task.detached {
            guard case .started(let name) = moment else { return }
            // The demo says nothing while the fleet starts: its folder shows how far it got. Checked every 10 ms,
            // for at most a minute.
            for _ in 0..<6000 where process.isRunning {
                if fleetFiles(in: folder).contains("\(name).log") { return signal() }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        let reading = Task.detached { () -> (String, String) in
            var text = Data()
            var signalled = false
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                text.append(chunk)
                if !signalled, case .printed(let trigger) = moment,
                    String(decoding: text, as: UTF8.self).contains(trigger)
                {
                    signalled = true
                    signal()
                }
            }
            let errorText = error.fileHandleForReading.readDataToEndOfFile()
            return (String(decoding: text, as: UTF8.self), String(decoding: errorText, as: UTF8.self))
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(180))
            if process.isRunning { kill(pid, SIGKILL) }
        }
        let (out, err) = await reading.value
        watchdog.cancel()
        await watching.value
        process.waitUntilExit()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let remaining = processes(using: folder.path)
        // What a failing demo left running is stopped here, so that it doesn't outlive the test.
        for (id, _) in remaining { kill(id, SIGKILL) }
        return DemoRun(
            status: process.terminationStatus, output: out, error: err,
            leftovers: entries.map { "\(folder.path)/\($0)" } + remaining.map { "\($0.0): \($0.1)" },
            startedBeforeSignal: startedBeforeSignal.get())
    }

    /// The files in the fleet's folders under `folder` (one, `herald-fleet-…`, while the demo runs).
    static func fleetFiles(in folder: URL) -> [String] {
        let manager = FileManager.default
        let fleets = ((try? manager.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            $0.hasPrefix("herald-fleet-")
        }
        return fleets.flatMap { (try? manager.contentsOfDirectory(atPath: folder.appending(path: $0).path)) ?? [] }
    }

    /// The processes (their ids and command lines) that have a file under `path` open, have it as their
    /// working directory, or name it on their command line.
    static func processes(using path: String) -> [(Int32, String)] {
        let own = getpid()
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
        return ids.filter { $0 != own }.compactMap { id -> (Int32, String)? in
            let commandLine =
                (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(id)/cmdline")))
                .map { String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "\0", with: " ") } ?? ""
            let links =
                ["cwd"]
                + ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(id)/fd")) ?? [])
                .map { "fd/\($0)" }
            let usesPath = links.contains { link in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(id)/\(link)"))?.hasPrefix(path)
                    == true
            }
            return usesPath || commandLine.contains(path) ? (id, commandLine) : nil
        }
    }
}
