import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// A retried download continues from the bytes its file already holds, with `Range` and `If-Range`, when
/// the first response allowed it; a changed resource starts over; a data task that became a download is
/// retried as that download.
@Suite("Download retries")
struct DownloadRetryTests {
    static let fast = RetryPolicy(retryLimit: 2, backoffScale: 0.01, maximumBackoff: 0.05)
    static let size = 200_000
    /// Where the first answer stops: 40% of the body.
    static let dropped = 80_000

    @Test(
        "a chunked download that lost only its last chunk's end: resumed or retried, the 416 naming its length completes it"
    )
    func alreadyCompleteAfterDrop() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let size = 100_000
        let path = "/bytes/\(size)"

        // Resumed from resume data: every byte is in the partial file, the chunked body's end never came.
        let first = try session.downloadTask(
            with: Request(url: server.url("\(path)?chunked=1&dropAfter=\(size)&key=resumed")))
        first.resume()
        try await recorder.waitForCompletions(1)
        #expect(first.error?.code == .networkConnectionLost)
        let data = try #require(first.resumeDataAfterFailure)
        let resumedTo = scratch.url.appendingPathComponent("resumed.bin")
        let (fileURL, response) = try await session.download(resumingWith: data, to: resumedTo)
        #expect(fileURL == resumedTo && response.statusCode == 416)
        #expect(try PatternFile.matches(resumedTo, count: size))
        #expect(server.requests(forPath: path).last?.headerValue("Range") == "bytes=\(size)-")

        // Retried by the task's retrier: the same answer ends the retry, not the file.
        let retriedTo = scratch.url.appendingPathComponent("retried.bin")
        let task = try session.downloadTask(
            with: Request(url: server.url("\(path)?chunked=1&dropAfter=\(size)&key=retried")),
            destination: { _, _ in retriedTo })
        task.interceptor = Self.fast
        task.resume()
        try await recorder.waitForCompletions(3)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(task.error == nil, "\(String(describing: task.error))")
        #expect(task.response?.statusCode == 416)
        #expect(try PatternFile.matches(retriedTo, count: size))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a download dropped at 40% is retried with one Range request from the bytes written: byte-exact")
    func continuesAfterDrop() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let path = "/bytes/\(Self.size)"
        let destination = scratch.url.appendingPathComponent("archive.bin")
        let task = try session.downloadTask(
            with: Request(url: server.url("\(path)?key=drop&dropAfter=\(Self.dropped)&chunkSize=16384")),
            destination: { _, _ in destination })
        task.interceptor = Self.fast
        task.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        let retry = try #require(recorder.events.compactMap(\.retry).first)
        #expect(retry.error.code == .networkConnectionLost)
        #expect(retry.continuesFromByte == Int64(Self.dropped))
        #expect(task.error == nil && task.response?.statusCode == 206)

        let requests = server.requests(forPath: path)
        #expect(requests.count == 2)
        let ranged = requests.filter { $0.headerValue("Range") != nil }
        #expect(ranged.count == 1)
        #expect(ranged.first?.headerValue("Range") == "bytes=\(Self.dropped)-")
        #expect(ranged.first?.headerValue("If-Range") == "\"herald-bytes-\(Self.size)\"")
        #expect(ranged.first?.responseStatus == 206)
        #expect(requests.first?.bodyBytesSent == Self.dropped)
        #expect(try PatternFile.matches(destination, count: Self.size))
        #expect(task.downloadProgress.completedUnitCount == Int64(Self.size))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a download behind a redirect, dropped at 40%, continues with one Range request to the redirect's target")
    func continuesBehindRedirect() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let path = "/bytes/\(Self.size)"
        let target = server.url("\(path)?key=redirected-drop&dropAfter=\(Self.dropped)&chunkSize=16384")
        let encoded = try #require(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let destination = scratch.url.appendingPathComponent("behind-redirect.bin")
        let task = try session.downloadTask(
            with: Request(url: server.url("/redirect-to?url=\(encoded)")), destination: { _, _ in destination })
        task.interceptor = Self.fast
        task.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(recorder.events.compactMap(\.retry).first?.continuesFromByte == Int64(Self.dropped))
        #expect(task.error == nil && task.response?.statusCode == 206)
        #expect(task.response?.url == target)
        // The redirect was asked once, by the first attempt; the retry went straight to the file.
        #expect(server.requests(forPath: "/redirect-to").count == 1)
        let requests = server.requests(forPath: path)
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=\(Self.dropped)-")
        #expect(try PatternFile.matches(destination, count: Self.size))
        try await Self.tearDown(session, scratch, server)
    }

    /// A download of the pattern file behind a redirect to another origin of the same loopback server (another
    /// host name), with the caller's `Authorization`, retried by ``fast``; `query` shapes the file's answers.
    /// Returns once the task completed.
    struct CrossOriginDownload {
        let server: TestServer
        let scratch: ScratchDirectory
        let session: SessionManager
        let task: DownloadTask
        let destination: URL
        let path = "/bytes/\(DownloadRetryTests.size)"

        init(query: String, configuration: SessionConfiguration = SessionConfiguration()) async throws {
            server = try await TestServer.start()
            scratch = try ScratchDirectory()
            session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            let recorder = RecordingObserver(center: session.notificationCenter)
            let target = try #require(URL(string: "http://localhost:\(server.port)\(path)?\(query)&chunkSize=16384"))
            let encoded = try #require(
                target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let destination = scratch.url.appendingPathComponent("cross-origin.bin")
            self.destination = destination
            task = try session.downloadTask(
                with: Request(
                    url: server.url("/redirect-to?url=\(encoded)"), headers: ["Authorization": "Basic caller"]),
                destination: { _, _ in destination })
            task.interceptor = DownloadRetryTests.fast
            task.resume()
            try await recorder.waitForCompletions(1)
        }

        func tearDown() async throws { try await DownloadRetryTests.tearDown(session, scratch, server) }
    }

    @Test("a retry behind a redirect to another origin sends none of the session's or the caller's credentials there")
    func continuesAcrossOriginsWithoutCredentials() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer session-secret"]
        let download = try await CrossOriginDownload(
            query: "key=cross-origin&dropAfter=\(Self.dropped)", configuration: configuration)
        let (task, server) = (download.task, download.server)
        #expect(task.error == nil && task.response?.statusCode == 206)
        #expect(server.requests(forPath: "/redirect-to").first?.headerValue("Authorization") == "Basic caller")
        let requests = server.requests(forPath: download.path)
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=\(Self.dropped)-")
        #expect(requests.allSatisfy { $0.headerValue("Authorization") == nil })
        #expect(try PatternFile.matches(download.destination, count: Self.size))
        try await download.tearDown()
    }

    @Test("a third attempt behind a redirect to another origin continues there too, not at the first URL")
    func thirdAttemptKeepsTheTarget() async throws {
        // The first two requests for the file each stop short; the third gets the rest.
        let download = try await CrossOriginDownload(query: "key=third&dropAfter=\(Self.dropped)&drops=2")
        let (task, server) = (download.task, download.server)
        #expect(task.error == nil, "\(String(describing: task.error))")
        #expect(task.response?.statusCode == 206)
        // Before, the third attempt went back to the redirecting URL, without the caller's credentials (the resume
        // had left its origin), and the download failed there.
        #expect(server.requests(forPath: "/redirect-to").count == 1)
        let requests = server.requests(forPath: download.path)
        #expect(
            requests.map { $0.headerValue("Range") } == [nil, "bytes=\(Self.dropped)-", "bytes=\(2 * Self.dropped)-"])
        #expect(requests.allSatisfy { $0.headerValue("Authorization") == nil })
        #expect(try PatternFile.matches(download.destination, count: Self.size))
        try await download.tearDown()
    }

    /// Signs each attempt's URL anew, as a presigned-URL API does: `sig=<attempt>`.
    struct SigningAdapter: RequestAdapter {
        let attempts = Locked(0)
        func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            var signed = request
            signed.url = URL(string: request.url.absoluteString + "&sig=\(attempt)") ?? request.url
            return signed
        }
    }

    @Test("a retry without a redirect asks the URL its adapter gives it now, not the one of the failed attempt")
    func continuesAtTheAdaptedURL() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let path = "/bytes/\(Self.size)"
        let destination = scratch.url.appendingPathComponent("signed.bin")
        let task = try session.downloadTask(
            with: Request(url: server.url("\(path)?key=signed&dropAfter=\(Self.dropped)&chunkSize=16384")),
            destination: { _, _ in destination })
        task.interceptor = Interceptor(adapters: [SigningAdapter()], retriers: [Self.fast])
        task.resume()

        try await recorder.waitForCompletions(1)
        #expect(task.error == nil && task.response?.statusCode == 206)
        let requests = server.requests(forPath: path)
        #expect(requests.map { $0.uri.contains("sig=1") } == [true, false])
        #expect(requests.last?.uri.contains("sig=2") == true)
        #expect(requests.last?.headerValue("Range") == "bytes=\(Self.dropped)-")
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a resource that changed meanwhile (If-Range no longer matches: 200) is written again from byte 0")
    func startsOverWhenChanged() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let path = "/bytes/\(Self.size)"
        let destination = scratch.url.appendingPathComponent("changed.bin")
        let task = try session.downloadTask(
            with: Request(url: server.url("\(path)?key=changed&dropAfter=\(Self.dropped)&changed=1&chunkSize=16384")),
            destination: { _, _ in destination })
        task.interceptor = Self.fast
        task.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .retry, .complete])
        #expect(recorder.events.compactMap(\.retry).first?.continuesFromByte == Int64(Self.dropped))
        #expect(task.error == nil && task.response?.statusCode == 200)
        // The server counts a write once it has completed, which can be after the client has read the bytes
        // (under ThreadSanitizer it was): wait for its count of the second answer to reach the whole body.
        let size = Self.size
        try await server.waitUntil { statistics in
            statistics.requests.filter { $0.path == path }.last?.bodyBytesSent == size
        }
        let requests = server.requests(forPath: path)
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=\(Self.dropped)-")
        #expect(requests.last?.headerValue("If-Range") == "\"herald-bytes-\(Self.size)\"")
        #expect(requests.last?.responseStatus == 200)
        #expect(requests.last?.bodyBytesSent == Self.size)
        // The changed representation, whole: not the first version's bytes with the second's spliced on.
        let changed = Data(TestServer.expectedBytes(in: 1..<(Self.size + 1)))
        #expect(try Data(contentsOf: destination) == changed)
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a data task that became a download is retried as that download, continuing its file")
    func becameDownloadIsRetried() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        let size = 2_000_000
        let path = "/bytes/\(size)"
        let downloads = scratch.url
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        session.downloadTaskDidFinishDownloading = { _, _, response in
            downloads.appendingPathComponent(response.suggestedFilename)
        }
        let delivered = Locked<URL?>(nil)
        let fetch = try session.dataTask(with: Request(url: server.url("\(path)?key=become&dropAfter=800000"))) {
            _, object, _ in
            delivered.withLock { $0 = object as? URL }
        }
        fetch.interceptor = Self.fast
        fetch.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: fetch.taskIdentifier) == [.resume, .retry, .complete])
        #expect(recorder.events.compactMap(\.retry).first?.continuesFromByte == 800_000)
        let saved = scratch.url.appendingPathComponent("\(size)")
        #expect(recorder.completions.first?.error == nil)
        #expect(recorder.completions.first?.assetPath == saved)
        #expect(delivered.withLock { $0 } == saved)
        let requests = server.requests(forPath: path)
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") == "bytes=800000-")
        #expect(requests.last?.responseStatus == 206)
        #expect(try PatternFile.matches(saved, count: size))
        try await Self.tearDown(session, scratch, server)
    }

    @Test("a streamed upload that became a download and is retried asks taskNeedNewBodyStream about the upload task")
    func becameDownloadRenewsStreamForUpload() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        let asked = Locked<[SessionTask]>([])
        session.taskNeedNewBodyStream = { task in
            asked.withLock { $0.append(task) }
            return BodyStream(data: Data("again".utf8))
        }
        // A `PUT`, retried by default; its first answer stops short, and the retry starts again (a `PUT` is not
        // continued with a range), so its body is sent again.
        let upload = try session.uploadTask(
            withStreamedRequest: Request(
                url: server.url("/bytes/\(Self.size)?key=renew&dropAfter=\(Self.dropped)"), method: "PUT"),
            bodyProvider: BodyStream(data: Data("first".utf8)))
        upload.interceptor = Self.fast
        upload.resume()

        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: upload.taskIdentifier) == [.resume, .retry, .complete])
        #expect(recorder.completions.first?.error == nil)
        let tasks = asked.withLock { $0 }
        #expect(tasks.count == 1)
        #expect(tasks.first === upload)
        if let file = recorder.completions.first?.assetPath { try? FileManager.default.removeItem(at: file) }
        try await Self.tearDown(session, scratch, server)
    }

    @Test("cancelled while waiting for its retry, a data task that became a download completes as the download")
    func becameDownloadCancelledBetweenAttempts() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        session.dataTaskDidReceiveResponse = { _, _ in .becomeDownload }
        let became = Locked<DownloadTask?>(nil)
        session.dataTaskDidBecomeDownloadTask = { _, download in became.withLock { $0 = download } }
        let fetch = try session.dataTask(
            with: Request(url: server.url("/bytes/\(Self.size)?key=wait&dropAfter=\(Self.dropped)")))
        // A delay long enough that the cancel always comes first.
        fetch.interceptor = RetryPolicy(retryLimit: 1, backoffScale: 60, maximumBackoff: 60, jitter: 0)
        fetch.resume()

        try await recorder.waitUntil { events in events.contains { $0.kind == .retry } }
        fetch.cancel()
        try await recorder.waitForCompletions(1)
        #expect(recorder.timeline(ofTask: fetch.taskIdentifier) == [.resume, .retry, .complete])
        #expect(recorder.completions.first?.error?.code == .cancelled)
        // Completed as the download: its partial file is deleted, as any cancelled download's is.
        let download = try #require(became.withLock { $0 })
        #expect(!FileManager.default.fileExists(atPath: download.temporaryURL.path))
        try await Self.tearDown(session, scratch, server)
    }

    /// Invalidates `session`, removes `scratch` and stops `server`.
    static func tearDown(_ session: SessionManager, _ scratch: ScratchDirectory, _ server: TestServer) async throws {
        session.invalidate(cancelingTasks: true)
        scratch.remove()
        try await server.shutdown()
    }
}
