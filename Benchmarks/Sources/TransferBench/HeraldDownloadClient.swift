import Foundation
import TransferBenchKit

// A second compile-time split for Herald's download API (`downloadTask(with:progress:destination:
// completionHandler:)`), which may not be in the Herald checkout being measured:
// `-Xswiftc -DTRANSFERBENCH_NO_HERALD_DOWNLOAD` (run-transfers.sh adds it when Herald's sources don't
// declare the API) builds TransferBench without this client, and `--client herald --mode download-file`
// then exits with status 3. Never fake numbers.
#if TRANSFERBENCH_NO_HERALD || TRANSFERBENCH_NO_HERALD_DOWNLOAD
func runHeraldDownload(url: URL, destination: URL, expectedBytes: Int) -> LargeOutcome {
    FileHandle.standardError.write(
        Data(
            "TransferBench was built without the Herald download client (Herald's downloadTask(with:progress:destination:completionHandler:) is not available)\n"
                .utf8))
    exit(3)
}
#else
import Herald
import Synchronization

/// One large GET streamed to a file by a Herald download task, moved to `destination`, with a progress
/// handler as an app would pass one (target in Docs/Performance.md: ≥ 0.9× the C client's MB/s, peak RSS ≤ 32 MiB).
func runHeraldDownload(url: URL, destination: URL, expectedBytes: Int) -> LargeOutcome {
    let manager = SessionManager()
    removeStaleDestination(destination)
    let progressCalls = Atomic<Int>(0)
    var outcome = measureLarge { finish in
        do {
            try manager.downloadTask(
                with: Request(url: url),
                progress: { _ in progressCalls.add(1, ordering: .relaxed) },
                destination: { _, _ in destination },
                completionHandler: { response, fileURL, error in
                    if let error {
                        finish(LargeOutcome(failure: "\(error)"))
                    } else if let status = response?.statusCode, status != 200 {
                        finish(LargeOutcome(failure: "status \(status)"))
                    } else if response == nil {
                        finish(LargeOutcome(failure: "no response"))
                    } else {
                        finish(checkDownloadedFile(at: fileURL, destination: destination, expectedBytes: expectedBytes))
                    }
                }
            ).resume()
        } catch {
            finish(LargeOutcome(failure: "downloadTask(with:) threw \(error)"))
        }
    }
    // Outside the measured phase: wait for the session to finish invalidating, which removes its (now
    // empty) download directory, so that exiting right away doesn't leave it behind in the temp dir.
    let invalidated = DispatchSemaphore(value: 0)
    let token = manager.notificationCenter.addObserver(for: .sessionDidInvalidate, object: manager) { _ in
        invalidated.signal()
    }
    manager.invalidate(cancelingTasks: false)
    if invalidated.wait(timeout: .now() + 5) == .timedOut {
        FileHandle.standardError.write(Data("warning: the session did not finish invalidating within 5 s\n".utf8))
    }
    token.cancel()
    outcome.progressCalls = progressCalls.load(ordering: .relaxed)
    return outcome
}
#endif
