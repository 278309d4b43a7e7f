import ArgumentParser
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Logging
import SignalStop

/// Downloads targets with at most `--concurrency` at once, with the observers attached, and reports.
struct FetchRun {
    let targets: [FetchTarget]
    let options: RunOptions
    let transfer: TransferOptions

    /// Everything a run ended with.
    struct Outcome {
        var results: [FetchResult]
        var notStarted: Int
        var interruptedBy: ExitStatus?
        /// Why the `--events` lines could not all be written, if so: a local file error.
        var eventsFailure: String?
        /// Why the summary table could not be written, if so (a full disk, an I/O error): a local file error.
        /// A reader that has gone (`| head`) is none: it asked for no more.
        var summaryFailure: String?

        /// The exit status: the interruption's, else the most severe failure's (the demo's planned 404 is none),
        /// an unwritable `--events` or summary counting as a local file error.
        var exitStatus: ExitStatus {
            if let interruptedBy { return interruptedBy }
            let failures = results.filter { !$0.behavedAsExpected }.compactMap { $0.failure?.exitStatus }
            let outputFailures = [eventsFailure, summaryFailure].compactMap { failure in
                failure.map { _ in ExitStatus.localFileError }
            }
            return (failures + outputFailures).max() ?? .success
        }
    }

    /// Runs the downloads and prints the summary; the exit status is the outcome's.
    func run() async throws(ExitCode) -> Outcome {
        let closedStreams = StandardStream.closedAtLaunch.withLock { $0 }
        let display = ActivityDisplay(enabled: !options.quiet)
        let console = Console(quiet: options.quiet, display: display)
        let output: OutputDirectory?
        do throws(OutputDirectory.Unusable) {
            // Before the first request: a bad --output-dir found after every download is too late.
            output = try options.outputDir.map { path throws(OutputDirectory.Unusable) in
                try OutputDirectory(path: path, overwrite: options.overwrite)
            }
        } catch {
            console.error(error.description)
            throw ExitCode(ExitStatus.localFileError.rawValue)
        }
        let session: SessionManager
        do {
            session = SessionManager(
                configuration: try makeConfiguration(output: output, console: console),
                notificationCenter: NotificationHub())
        } catch {
            console.error("\(error)")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        if transfer.insecure {
            console.warn(
                "--insecure: TLS certificates are NOT verified; anyone on the path can read and change this traffic.")
        }
        let observers = Observers(
            session: session, options: options, display: display,
            stdoutIsClosed: closedStreams.contains(STDOUT_FILENO))
        let downloader = Downloader(
            session: session, output: output,
            resumeStore: transfer.resume ? output.map { ResumeStore(outputDirectory: $0.url) } : nil,
            savedFiles: transfer.resume ? output.map { SavedFileIndex(directory: $0.url) } : nil,
            retrySchedule: RetrySchedule(retries: transfer.retry, initialDelay: transfer.retryDelay),
            maximumSize: transfer.maxFilesize?.bytes, display: display, console: console)

        // Watching before the first request: a signal from now on cancels and cleans up.
        let interruption = SignalStop()
        interruption.watch()
        display.start()
        let work = Task { await downloadAll(with: downloader) }
        // A signal cancels the downloads. One after the last of them ended cuts the wait for the display short
        // and changes nothing else: every download had its outcome, and the events are still all written.
        interruption.whenSignalled {
            work.cancel()
            display.endWaits()
        }
        let results = await work.value
        // Every download kept its files or saved them by now.
        downloader.resumeStore?.removeFolderIfEmpty()
        let interruptedBy = interruption.exitStatus.flatMap(ExitStatus.init(rawValue:))
        await observers.finish(session: session)
        if interruptedBy == nil {
            // Let the indicator's completion delay run out so the display ends hidden, as a user would see it.
            await display.waitUntilHidden(timeout: options.completionDelay + 1)
        }
        display.stop()

        let finished = results.compactMap { $0 }
        var outcome = Outcome(
            results: finished, notStarted: results.count - finished.count, interruptedBy: interruptedBy,
            eventsFailure: observers.eventsFailure)
        outcome.summaryFailure = report(outcome, console: console)
        if let failure = outcome.eventsFailure {
            console.error("--events: stdout could not be written (\(failure)); the event log is incomplete.")
        }
        if let failure = outcome.summaryFailure {
            console.error("the summary could not be written to stdout (\(failure)).")
        }
        return outcome
    }

    private func makeConfiguration(output: OutputDirectory?, console: Console) throws -> SessionConfiguration {
        var configuration = SessionConfiguration()
        if let output {
            // Temporary files beside the saved ones (in a hidden private folder Herald makes there): the final
            // move is a rename on the same file system, and $TMPDIR's size no longer limits a download.
            do throws(HeraldError) {
                try SessionConfiguration.validateTemporaryDirectory(output.url)
                configuration.temporaryDirectory = output.url
            } catch {
                console.warn("temporary files go in $TMPDIR: \(error.message)")
            }
        }
        if let timeout = transfer.timeout { configuration.timeoutIntervalForRequest = timeout }
        if let maxTime = transfer.maxTime { configuration.timeoutIntervalForResource = maxTime }
        configuration.httpAdditionalHeaders = try transfer.headerFields()
        configuration.securityPolicy = try transfer.securityPolicy()
        // Only ever one path component inside --output-dir: no directories to create.
        configuration.downloadMoveOptions = options.overwrite ? [.replaceExistingFile] : []
        // Off by default, like curl: a script run offline should fail, not hang until --max-time.
        configuration.waitsForConnectivity = options.waitForNetwork
        return configuration
    }

    /// `nil` for a target never started because the run was interrupted first.
    private func downloadAll(with downloader: Downloader) async -> [FetchResult?] {
        var results = [FetchResult?](repeating: nil, count: targets.count)
        await withTaskGroup(of: (Int, FetchResult).self) { group in
            var next = 0
            func addNext() {
                guard next < targets.count, !Task.isCancelled else { return }
                let index = next
                next += 1
                group.addTask { (index, await downloader.fetch(targets[index], index: index)) }
            }
            for _ in 0..<min(options.concurrency, targets.count) { addNext() }
            for await (index, result) in group {
                results[index] = result
                addNext()
            }
        }
        return results
    }

    /// Writes the notes on kept files and, unless `--quiet`, the summary table.
    /// - Returns: Why the summary table could not be written, if it could not, except for a reader that has gone.
    private func report(_ outcome: Outcome, console: Console) -> String? {
        for result in outcome.results {
            switch result.file {
            case .keptAfterFailedMove(let path):
                console.error(
                    "\(console.redacted(result.target.url)): downloaded but not saved; the file is kept at \(path)")
            case .partial(let path):
                console.note("\(console.redacted(result.target.url)): partial download kept for --continue at \(path)")
            case .saved, .alreadyThere, nil:
                break
            }
            if options.quiet, let failure = result.failure, !result.behavedAsExpected {
                console.error("\(console.redacted(result.target.url)): \(failure.message)")
            }
        }
        guard !options.quiet else { return nil }
        let table = SummaryTable(outcome: outcome, console: console).render()
        if options.events {
            // With --events the table goes to stderr, for a person: like the console's lines, it may be lost there.
            StandardStream.write(table, to: STDERR_FILENO)
            return nil
        }
        guard let error = StandardStream.write(table, to: STDOUT_FILENO), error != EPIPE else { return nil }
        return String(cString: strerror(error))
    }
}
