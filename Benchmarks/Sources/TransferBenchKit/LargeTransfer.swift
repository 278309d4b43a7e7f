import Foundation
import Synchronization

/// The large-body modes of Docs/Performance.md's 1 GiB rows (`--mode`): one GET of the whole body.
public enum LargeMode: String, Sendable {
    /// The body goes to a file (`--destination`) as it arrives; the client's download API.
    case downloadFile = "download-file"
    /// The body is collected in memory; the client's data task.
    case dataMemory = "data-memory"
    /// The body is streamed to a consumer that counts each chunk's bytes and keeps none: Herald's
    /// `bytes(for:)`, AsyncHTTPClient's response body as an async sequence.
    case stream
}

/// What one large transfer produced: the body size the client saw, the wall time from `resume()` to the
/// end of the completion handler (including, for downloads, moving the file to its destination), and
/// what was wrong, if anything.
public struct LargeOutcome: Sendable {
    public var bytes = 0
    public var seconds = 0.0
    public var failure: String?
    /// How many times the client's progress handler ran, when it has one.
    public var progressCalls: Int?

    public init(bytes: Int = 0, seconds: Double = 0, failure: String? = nil, progressCalls: Int? = nil) {
        self.bytes = bytes
        self.seconds = seconds
        self.failure = failure
        self.progressCalls = progressCalls
    }
}

extension LargeOutcome {
    /// A streamed body's outcome: `bytes` counted, failed unless the status is 200 and the count `expectedBytes`.
    public init(streamedBytes bytes: Int, status: Int, expectedBytes: Int) {
        self.init(bytes: bytes)
        if status != 200 {
            failure = "status \(status)"
        } else if bytes != expectedBytes {
            failure = "\(bytes) body bytes, expected \(expectedBytes)"
        }
    }
}

/// Runs one large transfer: `start` is handed a `finish` callback that it must call exactly once, from
/// any thread, when the transfer is over; blocks until then and times it.
public func measureLarge(_ start: (@escaping @Sendable (LargeOutcome) -> Void) -> Void) -> LargeOutcome {
    let result = Mutex<LargeOutcome?>(nil)
    let done = DispatchSemaphore(value: 0)
    let begin = DispatchTime.now().uptimeNanoseconds
    start { outcome in
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    let end = DispatchTime.now().uptimeNanoseconds
    var outcome = result.withLock { $0! }
    outcome.seconds = Double(end - begin) / 1e9
    return outcome
}

/// The size of the file at `path`, or nil when it can't be read.
public func fileSize(atPath path: String) -> Int? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int(info.st_size)
}

/// Checks a finished download: the file is where we asked, with the expected size.
public func checkDownloadedFile(at fileURL: URL?, destination: URL, expectedBytes: Int) -> LargeOutcome {
    var outcome = LargeOutcome()
    guard let fileURL else {
        outcome.failure = "no file URL"
        return outcome
    }
    guard fileURL.standardizedFileURL.path == destination.standardizedFileURL.path else {
        outcome.failure = "file is at \(fileURL.path), not at the destination \(destination.path)"
        return outcome
    }
    if let size = fileSize(atPath: fileURL.path) {
        outcome.bytes = size
        if size != expectedBytes { outcome.failure = "\(size) bytes in the file, expected \(expectedBytes)" }
    } else {
        outcome.failure = "cannot stat \(fileURL.path): errno \(errno)"
    }
    return outcome
}

/// Removes a stale file from an earlier run so that a client's move into `destination` can succeed.
public func removeStaleDestination(_ destination: URL) {
    try? FileManager.default.removeItem(at: destination)
}
