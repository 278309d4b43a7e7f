import Foundation
import Synchronization

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
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardInput = FileHandle.nullDevice
        let (lines, lineSink) = AsyncStream.makeStream(of: String.self)
        let pending = Mutex(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            guard !chunk.isEmpty else {
                handle.readabilityHandler = nil
                lineSink.finish()
                return
            }
            let complete = pending.withLock { buffer -> [String] in
                buffer.append(chunk)
                var found: [String] = []
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    found.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
                return found
            }
            for line in complete { lineSink.yield(line) }
        }
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
