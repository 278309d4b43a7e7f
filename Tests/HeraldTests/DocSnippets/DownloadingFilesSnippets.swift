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

    /// Polls until `task` has written at least `bytes` bytes of its body.
    static func waitForBytes(_ bytes: Int64, of task: SessionTask) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while task.downloadProgress.completedUnitCount < bytes {
            guard ContinuousClock.now < deadline else { throw HeraldError(.timedOut, "No body bytes arrived.") }
            try await Task.sleep(for: .milliseconds(5))
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
        // Paced over >= 2.5 s, so that the cancel lands mid-body.
        let url = server.url("/bytes/\(size)?chunkSize=16384&delayMs=20")
        let destination = scratch.url.appendingPathComponent("archive.tar")
        let broken = try session.downloadTask(with: Request(url: server.url("/json")))  // never resumed

        let big = try session.downloadTask(with: Request(url: url))
        big.resume()

        try await Self.waitForBytes(64 << 10, of: big)
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

        try await recorder.waitForCompletions(1)
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

    @Test("the async forms: a resumable failure keeps its partial file, which nothing refers to")
    func asyncFailureKeepsPartialFile() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForRequest = 8
        configuration.temporaryDirectory = scratch.url
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        let destination = scratch.url.appendingPathComponent("never.bin")
        await #expect(throws: HeraldError.self) {
            try await session.download(
                for: Request(url: server.url("/bytes/60000?chunkSize=40000&delayMs=60000")), to: destination)
        }
        let kept = Self.partialFiles(under: scratch.url)
        #expect(kept.count == 1)
        #expect(kept.first.flatMap { PatternFile.size(of: $0) } == 40_000)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a retried download asks for the whole body again: no Range, the file rewritten from byte 0")
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

        // A transfer broken mid-body is retried from its first byte, without Range.
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
        #expect(cut.error != nil && cut.resumeDataAfterFailure == nil)
        #expect(!FileManager.default.fileExists(atPath: cut.temporaryURL.path))

        // An error status still there when the retries are spent is a complete transfer: its body is moved.
        let spent = scratch.url.appendingPathComponent("spent.txt")
        let stubborn = try session.downloadTask(
            with: Request(url: server.url("/flaky?key=stubborn&fail=5")), destination: { _, _ in spent })
        stubborn.interceptor = fast
        stubborn.resume()
        try await recorder.waitForCompletions(3)
        #expect(recorder.timeline(ofTask: stubborn.taskIdentifier) == [.resume, .retry, .complete])
        #expect(stubborn.error == nil && stubborn.response?.statusCode == 503)
        #expect(FileManager.default.fileExists(atPath: spent.path))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a task from resume data that gets a 503 fails with cannotResume, is not retried, and loses its file")
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
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(task.error?.code == .cannotResume)
        #expect(server.requests(forPath: "/flaky").count == 1)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
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
