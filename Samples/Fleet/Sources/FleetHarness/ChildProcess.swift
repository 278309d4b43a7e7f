import Foundation

/// A program the harness runs: its standard output read line by line (the harness waits for the line that
/// gives its port), its standard error kept in a file for when something fails.
final class ChildProcess: Sendable {
    let name: String
    let logFile: URL
    private let process: Process
    private let lines: AsyncStream<String>
    private let exited: AsyncStream<Int32>

    /// Starts `executable` with `arguments`.
    /// - Throws: ``FleetError`` when it cannot be started.
    init(name: String, executable: URL, arguments: [String], logDirectory: URL) throws {
        self.name = name
        logFile = logDirectory.appending(path: "\(name).log")
        guard FileManager.default.createFile(atPath: logFile.path, contents: nil) else {
            throw FleetError("cannot create \(logFile.path)")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        // Without OpenTelemetry's variables: the services are configured by their command line alone.
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardInput = FileHandle.nullDevice
        let (lines, lineSink) = AsyncStream.makeStream(of: String.self)
        // Read by a thread of its own, blocked in read(2) until the output ends. Not a readability handler:
        // tearing one down at the end of the output races libdispatch's epoll bookkeeping on Linux, and its
        // manager thread then crashes on a freed registration, taking the harness with it. The thread holds
        // the handle, so the descriptor stays open until its last read has returned.
        let reading = output.fileHandleForReading
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            var pending = Data()
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reading.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending.append(contentsOf: buffer[..<count])
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lineSink.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            lineSink.finish()
        }
        reader.name = "fleet-\(name)-output"
        let (exited, exitSink) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { finished in
            exitSink.yield(finished.terminationStatus)
            exitSink.finish()
        }
        self.process = process
        self.lines = lines
        self.exited = exited
        do {
            try process.run()
        } catch {
            throw FleetError("cannot start \(executable.path): \(error)")
        }
        // Started once the program runs: Foundation has closed this process's copy of the pipe's write end
        // by then, so the program's exit ends the reads.
        reader.start()
    }

    /// Waits for the line `listening on PORT` and returns the port.
    /// - Throws: ``FleetError`` if the program ends, or says nothing of the kind within `seconds`.
    func waitForPort(seconds: Double = 60) async throws -> Int {
        let lines = lines
        let name = name
        let log = logFile
        return try await withDeadline(seconds: seconds, "\(name) to listen (log: \(log.path))") {
            for await line in lines {
                if line.hasPrefix("listening on "), let port = Int(line.dropFirst("listening on ".count)), port > 0 {
                    return port
                }
            }
            throw FleetError("\(name) ended before listening; its log: \(log.path)")
        }
    }

    /// The last lines of the program's standard error.
    func logTail(lines count: Int = 20) -> String {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(count).joined(separator: "\n")
    }

    /// Sends SIGTERM and waits for the program to exit (SIGKILL after `seconds`); returns its status.
    @discardableResult
    func stop(seconds: Double = 15) async -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        let exited = exited
        do {
            return try await withDeadline(seconds: seconds, "\(name) to stop") {
                for await status in exited { return status }
                return nil
            }
        } catch {
            // The stream ended with the cancelled wait: wait for the killed process itself.
            kill(process.processIdentifier, SIGKILL)
            let process = process
            return await Task.detached {
                process.waitUntilExit()
                return process.terminationStatus
            }.value
        }
    }
}
