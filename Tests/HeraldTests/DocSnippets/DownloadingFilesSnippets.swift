import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The snippets of the DocC article "Downloading files", run against the loopback server, and the article's
/// claims about what is deleted, kept and retried.
@Suite("DownloadingFiles.md snippets")
struct DownloadingFilesSnippets {
    /// The `download-….part` files left in `folder`'s session folders (`.herald-XXXXXX`).
    static func partialFiles(under folder: URL) -> [URL] {
        let fileManager = FileManager.default
        let sessionFolders = (try? fileManager.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        return sessionFolders.filter { $0.lastPathComponent.hasPrefix(".herald-") }.flatMap { sessionFolder in
            ((try? fileManager.contentsOfDirectory(at: sessionFolder, includingPropertiesForKeys: nil)) ?? [])
                .filter { $0.lastPathComponent.hasPrefix("download-") && $0.pathExtension == "part" }
        }
    }

    @Test("download(for:to:) moves the body to the destination, a 404 page as well")
    func downloadToFile() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager()
        // doc-line: let url = URL(string: "https://files.example.com/archive.tar")!
        let url = server.url("/bytes/100000")
        // doc-line: let destination = URL(fileURLWithPath: "/var/tmp/archive.tar")
        let destination = scratch.url.appendingPathComponent("archive.tar")

        let (fileURL, response) = try await session.download(for: Request(url: url), to: destination)
        print(response.statusCode, "saved to", fileURL.path)

        #expect(fileURL == destination)
        #expect(try PatternFile.matches(destination, count: 100_000))
        let page = scratch.url.appendingPathComponent("page.html")
        let (pageURL, notFound) = try await session.download(
            for: Request(url: server.url("/status/404")), to: page)
        #expect(notFound.statusCode == 404 && pageURL == page)
        #expect(try String(contentsOf: page, encoding: .utf8) == "404 Not Found\n")
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a temporary directory of your own holds the session's private folder")
    func temporaryDirectory() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        var configuration = SessionConfiguration()
        // doc-line: configuration.temporaryDirectory = URL(fileURLWithPath: "/var/tmp/downloads")  // a folder that exists
        configuration.temporaryDirectory = scratch.url
        let sameDisk = SessionManager(configuration: configuration)

        let task = try sameDisk.downloadTask(with: Request(url: server.url("/bytes/1000")))
        let folder = task.temporaryURL.deletingLastPathComponent()
        #expect(folder.lastPathComponent.hasPrefix(".herald-"))
        #expect(folder.deletingLastPathComponent().standardizedFileURL.path == scratch.url.standardizedFileURL.path)
        #expect(task.temporaryURL.lastPathComponent.hasPrefix("download-"))
        #expect(task.temporaryURL.pathExtension == "part")
        task.cancel()
        sameDisk.invalidate(cancelingTasks: true)
        scratch.remove()
        try await server.shutdown()
    }

    @Test("the destination closure with move options: replaced, created, and an error page left behind")
    func destinationAndMoveOptions() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let urls = [server.url("/bytes/5000"), server.url("/bytes/5000"), server.url("/status/503")]
        var saves: [(URL, Int)] = []
        for url in urls {
            var options = SessionConfiguration()
            options.downloadMoveOptions = [.createIntermediateDirectories, .replaceExistingFile]
            let saving = SessionManager(configuration: options)
            // doc-line: let folder = URL(fileURLWithPath: "/var/tmp/downloads/reports")
            let folder = scratch.url.appendingPathComponent("downloads/reports")

            let (saved, answer) = try await saving.download(
                for: Request(url: url),
                destination: { temporaryURL, response in
                    // Leave an error page in the temporary folder rather than over a good file.
                    guard response.statusCode == 200 else { return temporaryURL }
                    return folder.appendingPathComponent(response.suggestedFilename)
                })
            if answer.statusCode != 200 { try FileManager.default.removeItem(at: saved) }

            saves.append((saved, answer.statusCode))
            saving.invalidate(cancelingTasks: true)
        }
        let good = scratch.url.appendingPathComponent("downloads/reports/5000")
        #expect(saves.map(\.0.path).prefix(2) == [good.path, good.path])
        #expect(saves.map(\.1) == [200, 200, 503])
        #expect(try PatternFile.matches(good, count: 5000))
        // The error page stayed in the session's folder, and the snippet removed it there.
        #expect(saves[2].0.deletingLastPathComponent().lastPathComponent.hasPrefix("herald-"))
        #expect(!FileManager.default.fileExists(atPath: saves[2].0.path))
        scratch.remove()
        try await server.shutdown()
    }

    @Test("the progress closure")
    func progress() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let url = server.url("/bytes/300000?chunkSize=65536")
        let destination = scratch.url.appendingPathComponent("copy.bin")

        let (copy, _) = try await session.download(
            for: Request(url: url), to: destination,
            progress: { progress in
                print(progress.completedUnitCount, "of", progress.totalUnitCount, "bytes")
            })
        print("saved to", copy.path)

        #expect(try PatternFile.matches(copy, count: 300_000))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a failed move: downloadDidFailToMoveFile, then the error with the kept file")
    func failedMove() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let (session, recorder) = Self.recordingSession()
        let url = server.url("/bytes/4000")
        let destination = scratch.url.appendingPathComponent("missing/folder/out.bin")

        let token = session.notificationCenter.addObserver(for: .downloadDidFailToMoveFile) { note in
            print("could not move", note.userInfo.sourceURL.path, "to", note.userInfo.destinationURL.path)
        }

        let task = try session.downloadTask(
            with: Request(url: url), destination: { _, _ in destination },
            completionHandler: { response, fileURL, error in
                if let error, error.code == .downloadMoveFailed, let kept = error.keptFileURL {
                    print("the whole body is kept at", kept.path)
                }
            })
        task.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .moveFailed, .complete])
        let error = try #require(task.error)
        #expect(error.code == .downloadMoveFailed && error.keptFileURL == task.temporaryURL)
        #expect(try PatternFile.matches(task.temporaryURL, count: 4000))
        try FileManager.default.removeItem(at: task.temporaryURL)
        token.cancel()
        try await Self.tearDown(session, scratch, server)
    }

    @Test("cancel(byProducingResumeData:), then a task from the resume data asks for the rest")
    func resumeAfterCancel() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let (session, recorder) = Self.recordingSession()
        let size = 2 << 20
        // The body waits at a gate after 128 KiB, so the cancel lands mid-body however late this test's task
        // resumes after the threshold (paced at 20 ms a chunk, a run on two busy cores once resumed it after the
        // whole body had arrived). Only the first request with the key waits there: the resumed one goes on.
        let url = server.url("/bytes/\(size)?chunkSize=16384&key=resume&gate=resume&gateAfter=131072")
        let destination = scratch.url.appendingPathComponent("archive.tar")
        let broken = try session.downloadTask(with: Request(url: server.url("/json")))  // never resumed
        let written = BytesWrittenThreshold(atLeast: 64 << 10, on: session)

        let big = try session.downloadTask(with: Request(url: url))
        big.resume()

        try await written.wait()
        let resumeData: Data? = await withCheckedContinuation { continuation in
            big.cancel(byProducingResumeData: { continuation.resume(returning: $0) })
        }

        try await recorder.waitForCompletions(1)
        #expect(big.error?.code == .cancelled)
        #expect(resumeData != nil && big.resumeDataAfterFailure == nil)
        let partialSize = try #require(PatternFile.size(of: big.temporaryURL))
        if let data = resumeData ?? broken.resumeDataAfterFailure {
            let rest = try session.downloadTask(
                withResumeData: data, destination: { _, _ in destination },
                completionHandler: { response, fileURL, error in
                    // 206: the rest was appended; 200: the server sent it all again, written from byte 0.
                    if let fileURL { print(response?.statusCode ?? 0, "saved to", fileURL.path) }
                })
            rest.resume()
        }

        try await recorder.waitForCompletions(2)
        #expect(recorder.completions.last?.error == nil)
        #expect(try PatternFile.matches(destination, count: size))
        let resumed = try #require(server.requests(forPath: "/bytes/\(size)").last)
        #expect(resumed.headerValue("Range") == "bytes=\(partialSize)-")
        #expect(resumed.headerValue("If-Range") == "\"herald-bytes-\(size)\"")
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a transfer that times out part-way leaves resumeDataAfterFailure, which completes it")
    func resumeAfterFailure() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        var configuration = SessionConfiguration()
        // The first 40,000 bytes at once, then a pause far longer than the idle timeout (generous, so that
        // connecting and the first chunk always beat it on a loaded machine).
        configuration.timeoutIntervalForRequest = 8
        let (session, recorder) = Self.recordingSession(configuration)
        let url = server.url("/bytes/60000?chunkSize=40000&delayMs=60000")
        let destination = scratch.url.appendingPathComponent("archive.tar")
        let resumeData: Data? = nil

        let broken = try session.downloadTask(
            with: Request(url: url),
            completionHandler: { _, _, error in
                if let error { print("failed:", error.code) }
            })
        broken.resume()

        // The 8 s idle timeout ends it: waited for with room for a loaded machine's late timer.
        try await recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(broken.error?.code == .timedOut)
        #expect(broken.resumeDataAfterFailure != nil)
        #expect(PatternFile.size(of: broken.temporaryURL) == 40_000)
        if let data = resumeData ?? broken.resumeDataAfterFailure {
            let rest = try session.downloadTask(
                withResumeData: data, destination: { _, _ in destination },
                completionHandler: { response, fileURL, error in
                    // 206: the rest was appended; 200: the server sent it all again, written from byte 0.
                    if let fileURL { print(response?.statusCode ?? 0, "saved to", fileURL.path) }
                })
            rest.resume()
        }

        try await recorder.waitForCompletions(2)
        #expect(recorder.completions.last?.error == nil)
        #expect(try PatternFile.matches(destination, count: 60_000))
        #expect(server.requests.last?.headerValue("Range") == "bytes=40000-")
        try await Self.tearDown(session, scratch, server)
    }

    @Test("the async forms: a resumable failure throws its resume data, and download(resumingWith:) completes it")
    func asyncFailureCarriesResumeData() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForRequest = 8
        configuration.temporaryDirectory = scratch.url
        let (session, recorder) = Self.recordingSession(configuration)
        let url = server.url("/bytes/60000?chunkSize=40000&delayMs=60000")
        let destination = scratch.url.appendingPathComponent("archive.tar")

        do throws(HeraldError) {
            let (fileURL, _) = try await session.download(for: Request(url: url), to: destination)
            print("saved to", fileURL.path)
        } catch {
            guard let resumeData = error.resumeData else { throw error }
            // The partial file is kept for the resume data: continue now, or keep the data for later.
            let (fileURL, response) = try await session.download(resumingWith: resumeData, to: destination)
            print(response.statusCode, "saved to", fileURL.path)
        }

        // The call returns before or while `taskDidComplete` is posted: the second completion may come later.
        try await recorder.waitForCompletions(2)
        let failed: HeraldError = try #require(recorder.completions.first?.error)
        #expect(failed.code == .timedOut)
        #expect(failed.resumeData != nil)
        #expect(recorder.completions.last?.error == nil)
        #expect(try PatternFile.matches(destination, count: 60_000))
        #expect(server.requests.last?.headerValue("Range") == "bytes=40000-")
        // The file that was partial is now the destination: nothing is left behind.
        #expect(Self.partialFiles(under: scratch.url).isEmpty)
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a retried download continues when it can, else starts over; an error status left after the retries fails")
    func retries() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let (session, recorder) = Self.recordingSession()
        let url = server.url("/flaky?key=patient&fail=1")
        let destination = scratch.url.appendingPathComponent("patient.json")

        let patient = try session.downloadTask(with: Request(url: url), destination: { _, _ in destination })
        patient.interceptor = RetryPolicy(retryLimit: 2)
        patient.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: patient.taskIdentifier) == [.resume, .retry, .complete])
        #expect(try String(contentsOf: destination, encoding: .utf8) == #"{"attempt":2,"key":"patient"}"#)

        // A transfer broken mid-body whose response had no validator is retried from its first byte, without Range.
        let fast = RetryPolicy(retryLimit: 1, backoffScale: 0.01, maximumBackoff: 0.05)
        let cut = try session.downloadTask(with: Request(url: server.url("/fault/reset-mid-body?bytes=50000")))
        cut.interceptor = fast
        cut.resume()
        try await recorder.waitForCompletions(2)
        #expect(recorder.timeline(ofTask: cut.taskIdentifier) == [.resume, .retry, .complete])
        let cutRequests = server.requests(forPath: "/fault/reset-mid-body")
        // Two attempts (a reset that came before any byte of the head can add a resend on a fresh connection,
        // which the engine makes inside one attempt), none of them asking for a range.
        #expect(cutRequests.count >= 2)
        #expect(cutRequests.allSatisfy { $0.headerValue("Range") == nil })
        let cutRetry: TaskRetry? = recorder.events.compactMap(\.retry).first { $0.taskIdentifier == cut.taskIdentifier }
        #expect(cutRetry != nil && cutRetry?.continuesFromByte == nil)
        #expect(cut.error != nil && cut.resumeDataAfterFailure == nil)
        #expect(!FileManager.default.fileExists(atPath: cut.temporaryURL.path))

        // An error status still there when the retries are spent fails the task with it: nothing is moved.
        let spent = scratch.url.appendingPathComponent("spent.txt")
        let stubborn = try session.downloadTask(
            with: Request(url: server.url("/flaky?key=stubborn&fail=5")), destination: { _, _ in spent })
        stubborn.interceptor = fast
        stubborn.resume()
        try await recorder.waitForCompletions(3)
        #expect(recorder.timeline(ofTask: stubborn.taskIdentifier) == [.resume, .retry, .complete])
        let stubbornError: HeraldError? = stubborn.error
        #expect(stubbornError?.code == .unacceptableStatusCode)
        #expect(stubbornError?.statusCode == 503)
        #expect(stubborn.response?.statusCode == 503)
        #expect(!FileManager.default.fileExists(atPath: spent.path))
        #expect(!FileManager.default.fileExists(atPath: stubborn.temporaryURL.path))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a task from resume data answered 503 keeps its partial file, is retried with Range, and fails with 503")
    func resumedErrorStatus() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let (session, recorder) = Self.recordingSession()
        let partial = scratch.url.appendingPathComponent("download-1-test.part")
        try Data(TestServer.expectedBytes(in: 0..<1000)).write(to: partial)
        let resumeData = try JSONSerialization.data(withJSONObject: [
            "format": "herald.download-resume-data", "version": 1,
            "url": server.url("/flaky?key=resumed&fail=5").absoluteString, "headers": [[String]](),
            "bytesReceived": 1000, "entityTag": "\"e\"", "partialFilePath": partial.path,
        ])
        let task = try session.downloadTask(withResumeData: resumeData)
        task.interceptor = RetryPolicy(retryLimit: 2, backoffScale: 0.01, maximumBackoff: 0.05)
        task.resume()
        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .retry, .complete])
        let retries: [TaskRetry] = recorder.events.compactMap(\.retry)
        let offsets: [Int64?] = retries.map(\.continuesFromByte)
        let statuses: [Int?] = retries.map(\.error.statusCode)
        #expect(offsets == [Int64(1000), Int64(1000)])
        #expect(statuses == [503, 503])
        let error: HeraldError = try #require(task.error)
        #expect(error.code == .unacceptableStatusCode)
        #expect(error.statusCode == 503)
        // Every attempt asked for the rest, and no error page was written over the partial file.
        let requests = server.requests(forPath: "/flaky")
        #expect(requests.count == 3)
        #expect(requests.allSatisfy { $0.headerValue("Range") == "bytes=1000-" })
        #expect(requests.allSatisfy { $0.headerValue("If-Range") == "\"e\"" })
        #expect(PatternFile.size(of: partial) == 1000)
        #expect(try Data(contentsOf: partial) == Data(TestServer.expectedBytes(in: 0..<1000)))
        // The resume data is kept, on the task and on the error, for a later try.
        let kept: Data? = task.resumeDataAfterFailure
        #expect(kept != nil)
        #expect(error.resumeData == kept)

        // A server that recovers: the retry's 200 (no range) writes the file from byte 0.
        let fields: [String: Any] = [
            "format": "herald.download-resume-data", "version": 1,
            "url": server.url("/flaky?key=recovering&fail=1").absoluteString, "headers": [[String]](),
            "bytesReceived": 1000, "entityTag": "\"e\"", "partialFilePath": partial.path,
        ]
        let recovering = try JSONSerialization.data(withJSONObject: fields)
        let second = try session.downloadTask(withResumeData: recovering)
        second.interceptor = RetryPolicy(retryLimit: 2, backoffScale: 0.01, maximumBackoff: 0.05)
        second.resume()
        try await recorder.waitForCompletions(2)
        #expect(recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .retry, .complete])
        #expect(second.error == nil && second.response?.statusCode == 200)
        #expect(try String(contentsOf: partial, encoding: .utf8) == #"{"attempt":2,"key":"recovering"}"#)
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a data task becomes a download; downloadTaskDidFinishDownloading places the file")
    func becomeDownload() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let (session, recorder) = Self.recordingSession()
        let url = server.url("/bytes/2000000")

        // doc-line: let downloads = URL(fileURLWithPath: "/var/tmp/downloads")
        let downloads = scratch.url
        session.dataTaskDidReceiveResponse = { _, response in
            (response.expectedContentLength ?? 0) > 1 << 20 ? .becomeDownload : .allow
        }
        session.dataTaskDidBecomeDownloadTask = { dataTask, downloadTask in
            print("task", dataTask.taskIdentifier, "writes to", downloadTask.temporaryURL.path)
        }
        session.downloadTaskDidFinishDownloading = { _, _, response in
            downloads.appendingPathComponent(response.suggestedFilename)
        }

        let fetch = try session.dataTask(with: Request(url: url)) { _, object, error in
            if let fileURL = object as? URL { print("saved to", fileURL.path) }
        }
        fetch.resume()

        try await recorder.waitForCompletions(1)
        let saved = scratch.url.appendingPathComponent("2000000")
        #expect(recorder.completions.first?.assetPath == saved)
        #expect(try PatternFile.matches(saved, count: 2_000_000))
        // A small body stays a data task.
        let small = try session.dataTask(with: Request(url: server.url("/json")))
        small.resume()
        try await recorder.waitForCompletions(2)
        #expect(recorder.completions.last?.assetPath == nil)
        try await Self.tearDown(session, scratch, server)
    }

    /// Awaits, with a timeout, the first write that brings one of `session`'s downloads to `bytes` bytes,
    /// through the session's `downloadTaskDidWriteData` hook: the test wakes on that event, never polls.
    final class BytesWrittenThreshold: Sendable {
        private struct State {
            var reached = false
            var waiter: CheckedContinuation<Void, any Error>?
        }
        private let state = Locked(State())

        /// Takes over `session`'s `downloadTaskDidWriteData` hook; make it before resuming the task.
        init(atLeast bytes: Int64, on session: SessionManager) {
            session.downloadTaskDidWriteData = { [state] _, _, total, _ in
                guard total >= bytes else { return }
                let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                    state.reached = true
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
        }

        /// Returns once the threshold is reached; throws `timedOut` when `timeout` passes first.
        func wait(timeout: Duration = .seconds(20)) async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let reached = state.withLock { state -> Bool in
                    if !state.reached { state.waiter = continuation }
                    return state.reached
                }
                if reached { return continuation.resume() }
                // Started once the waiter is registered: the deadline can't be missed.
                Task { [state] in
                    try? await Task.sleep(for: timeout)
                    let expired = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                        defer { state.waiter = nil }
                        return state.waiter
                    }
                    expired?.resume(throwing: HeraldError(.timedOut, "The download never wrote that many bytes."))
                }
            }
        }
    }

    /// A session posting to a center of its own, and a recorder on that center.
    static func recordingSession(
        _ configuration: SessionConfiguration = .default
    ) -> (SessionManager, RecordingObserver) {
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        return (session, RecordingObserver(center: session.notificationCenter))
    }

    /// Invalidates `session`, removes `scratch` and stops `server`.
    static func tearDown(_ session: SessionManager, _ scratch: ScratchDirectory, _ server: TestServer) async throws {
        session.invalidate(cancelingTasks: true)
        scratch.remove()
        try await server.shutdown()
    }
}
