import Foundation
import Herald
import HeraldNotifications
import HeraldTesting

/// Files holding the ``TestServer`` byte pattern (byte `i` is `UInt8(i % 251)`), written and checked in
/// chunks so that even 256 MiB never sits in memory.
enum PatternFile {
    /// A multiple of the pattern's period, so every chunk starts at pattern offset 0.
    static let chunkSize = 251 * 4096
    static let chunk = Data(TestServer.expectedBytes(in: 0..<chunkSize))

    /// Writes `count` pattern bytes to a new file in `directory`.
    static func make(count: Int, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("pattern-\(count).bin")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var remaining = count
        while remaining > 0 {
            let length = min(remaining, chunkSize)
            try handle.write(contentsOf: chunk.prefix(length))
            remaining -= length
        }
        return url
    }

    /// Whether the file at `url` holds exactly the first `count` pattern bytes.
    static func matches(_ url: URL, count: Int) throws -> Bool {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var offset = 0
        while offset < count {
            let length = min(count - offset, chunkSize)
            guard let read = try handle.read(upToCount: length), read == chunk.prefix(length) else { return false }
            offset += length
        }
        return try handle.read(upToCount: 1)?.isEmpty ?? true
    }

    /// The size of the file at `url`, or `nil` when there is none.
    static func size(of url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int
    }
}

/// A fresh directory for one test's files, removed by ``remove()``.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Collects download completion-handler calls.
final class DownloadLog: Sendable {
    struct Call: Sendable {
        let response: HTTPResponse?
        let fileURL: URL?
        let error: HeraldError?
    }

    private let calls = Locked<[Call]>([])

    var all: [Call] { calls.withLock { $0 } }

    var handler: @Sendable (HTTPResponse?, URL?, HeraldError?) -> Void {
        { response, fileURL, error in
            self.calls.withLock { $0.append(Call(response: response, fileURL: fileURL, error: error)) }
        }
    }
}

/// Delivers one value from a callback to an awaiting test, with a timeout.
final class OneShot<Value: Sendable>: Sendable {
    private let stream: AsyncStream<Value>
    private let continuation: AsyncStream<Value>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingOldest(1))
    }

    func send(_ value: Value) { continuation.yield(value) }

    struct TimedOut: Error {}

    func value(timeout: Duration = .seconds(20)) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { [stream] in
                for await value in stream { return value }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw TimedOut() }
            return value
        }
    }
}

/// Acts on a task once, from its progress handler, the first time its count reaches a threshold.
///
/// The progress handler runs on the session's completion queue, so the action lands mid-body however long
/// the test task waits for a cooperative thread: with the whole suite running that can be seconds, long
/// enough for a paced body to finish before an action taken after an `await`.
final class ActionAtProgress<Task: SessionTask>: Sendable {
    private let state = Locked<(task: Task?, done: Bool)>((nil, false))
    private let threshold: Int64
    private let action: @Sendable (Task) -> Void

    init(atLeast threshold: Int64 = 1, _ action: @escaping @Sendable (Task) -> Void) {
        self.threshold = threshold
        self.action = action
    }

    /// The task to act on; set it before resuming the task.
    func attach(_ task: Task) { state.withLock { $0.task = task } }

    /// The progress handler to pass to the task factory.
    var handler: @Sendable (TransferProgress) -> Void {
        { [self] progress in
            guard progress.completedUnitCount >= threshold else { return }
            let task = state.withLock { state -> Task? in
                guard !state.done else { return nil }
                state.done = true
                return state.task
            }
            if let task { action(task) }
        }
    }
}

/// The query of a `/bytes` body that stops at 512 KiB, its first request's only, until its connection closes or
/// the test opens gate `key`: an ``ActionAtProgress`` at the first bytes (a cancel, a suspend) lands mid-body
/// however late a loaded machine runs it. A later request with the same key (a resumption) goes straight on.
func stoppedBodyQuery(key: String) -> String {
    "chunkSize=16384&gate=\(key)&gateAfter=524288&key=\(key)"
}

/// The process's resident memory, from `/proc/self/status`.
enum ResidentMemory {
    /// `VmRSS` in bytes.
    static var current: Int { field("VmRSS:") }
    /// `VmHWM` (the peak since start or the last ``resetPeak()``) in bytes.
    static var peak: Int { field("VmHWM:") }

    /// Resets `VmHWM` to the current RSS (Linux: writing 5 to `/proc/self/clear_refs`).
    static func resetPeak() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            let digits = line.dropFirst(name.count).filter(\.isNumber)
            return (Int(digits) ?? 0) * 1024
        }
        return 0
    }
}
