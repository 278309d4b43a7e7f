import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Logging

/// One URL to download and the status it should end with (200–299 unless the demo plans otherwise).
struct FetchTarget: Sendable {
    var url: URL
    var expectedStatus: Int?
}

/// How one download ended.
struct FetchResult: Sendable {
    var target: FetchTarget
    var status: Int?
    var bytes: Int64
    var seconds: Double
    var error: String?
    var file: String?

    /// A transfer error or a status outside 200–299.
    var failed: Bool { error != nil || !(200..<300).contains(status ?? 0) }

    /// Success, or exactly the failure the target planned (the demo's 404).
    var behavedAsExpected: Bool {
        guard let expected = target.expectedStatus, !(200..<300).contains(expected) else { return !failed }
        return status == expected
    }
}

/// Downloads targets with at most `concurrency` at once, with the observers attached, and reports.
struct FetchRun {
    let targets: [FetchTarget]
    let options: RunOptions

    func run() async -> [FetchResult] {
        let center = NotificationHub()
        var configuration = SessionConfiguration()
        // A second run into the same --output-dir replaces its files instead of failing every move.
        configuration.downloadMoveOptions = [.replaceExistingFile, .createIntermediateDirectories]
        let session = SessionManager(configuration: configuration, notificationCenter: center)
        let display = ActivityDisplay()
        let indicator = NetworkActivityIndicator(
            activationDelay: options.activationDelay, completionDelay: options.completionDelay,
            onChange: { change in display.indicatorChanged(change) })
        display.indicator = indicator
        var logger = Logger(label: "activity-counter") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = options.logLevel
        var tokens = [indicator.observe(center), LoggingObserver(logger: logger).observe(center)]
        if options.events {
            tokens.append(JSONLinesEventLog(fileHandle: .standardOutput).observe(center))
        }
        let outputDirectory = options.outputDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
        if let outputDirectory {
            try? FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
        }

        display.start()
        var results = [FetchResult?](repeating: nil, count: targets.count)
        await withTaskGroup(of: (Int, FetchResult).self) { group in
            var next = 0
            func addNext() {
                guard next < targets.count else { return }
                let index = next
                next += 1
                group.addTask {
                    (
                        index,
                        await download(
                            targets[index], index: index, session: session, display: display,
                            into: outputDirectory)
                    )
                }
            }
            for _ in 0..<min(options.concurrency, targets.count) { addNext() }
            for await (index, result) in group {
                results[index] = result
                addNext()
            }
        }
        session.invalidate(cancelingTasks: false)
        // Let the indicator's completion delay run out so the display ends hidden, as a user would see it.
        await display.waitUntilHidden(timeout: options.completionDelay + 1)
        display.stop()
        tokens.forEach { $0.cancel() }

        let finished = results.compactMap { $0 }
        let table = SummaryTable(results: finished).render()
        if options.events {
            FileHandle.standardError.write(Data(table.utf8))
        } else {
            FileHandle.standardOutput.write(Data(table.utf8))
        }
        return finished
    }

    private func download(
        _ target: FetchTarget, index: Int, session: SessionManager, display: ActivityDisplay, into directory: URL?
    ) async -> FetchResult {
        let clock = ContinuousClock()
        let start = clock.now
        return await withCheckedContinuation { continuation in
            do {
                // A download task streams the body to a file as it arrives, so memory stays flat whatever
                // the size. Without --output-dir the file is only counted, then removed.
                let task = try session.downloadTask(
                    with: Request(url: target.url),
                    progress: { progress in display.progress(index, bytes: progress.completedUnitCount) },
                    destination: { temporaryURL, response in
                        // Only successful bodies are saved; an error page stays in the temporary file.
                        guard let directory, (200..<300).contains(response.statusCode) else { return temporaryURL }
                        return directory.appendingPathComponent(Self.fileName(for: target.url, index: index))
                    }
                ) { response, fileURL, error in
                    let size = fileURL.flatMap {
                        try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? NSNumber
                    }
                    let bytes = size?.int64Value ?? 0
                    var file: String?
                    if let fileURL {
                        let saved =
                            directory.map {
                                fileURL.deletingLastPathComponent().standardizedFileURL == $0.standardizedFileURL
                            }
                            ?? false
                        if saved || error?.code == .downloadMoveFailed {
                            // Moved into --output-dir, or kept where it is because the move failed: either
                            // way the bytes are the user's and the summary says where they are.
                            file = fileURL.path
                        } else {
                            try? FileManager.default.removeItem(at: fileURL)
                        }
                    }
                    display.progress(index, bytes: bytes)
                    let elapsed = start.duration(to: clock.now)
                    continuation.resume(
                        returning: FetchResult(
                            target: target, status: response?.statusCode, bytes: bytes,
                            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
                            error: error.map { $0.code.description }, file: file))
                }
                task.resume()
            } catch {
                continuation.resume(
                    returning: FetchResult(
                        target: target, status: nil, bytes: 0, seconds: 0,
                        error: (error as? HeraldError)?.code.description ?? "\(error)"))
            }
        }
    }

    /// `3-8388608` for `/bytes/8388608?…`: the last path component, prefixed to keep names unique.
    static func fileName(for url: URL, index: Int) -> String {
        let last = url.lastPathComponent
        let safe = last.isEmpty || last == "/" ? "index" : last
        return "\(index + 1)-\(safe)"
    }
}
