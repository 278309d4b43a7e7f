import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Download resume data")
struct ResumeDataTests {
    /// Starts a download of `path` (a body that stops mid-way: ``stoppedBodyQuery(key:)``), waits for some bytes, and
    /// cancels it producing resume data.
    private func cancelMidway(
        _ fixture: SessionFixture, path: String, size: Int
    ) async throws -> (task: DownloadTask, resumeData: Data?, log: DownloadLog) {
        let log = DownloadLog()
        let resumeData = OneShot<Data?>()
        let cancel = ActionAtProgress<DownloadTask>(atLeast: 256 * 1024) {
            $0.cancel(byProducingResumeData: { resumeData.send($0) })
        }
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url(path)), progress: cancel.handler, completionHandler: log.handler)
        cancel.attach(task)
        task.resume()
        let data = try await resumeData.value()
        try await fixture.recorder.waitForCompletions(1)
        return (task, data, log)
    }

    /// Stops a download of `path` midway (``cancelMidway(_:path:size:)``), then runs a task made from its resume
    /// data to its completion: the partial file's size when stopped, the second task and its completion.
    private func stopThenContinue(
        _ fixture: SessionFixture, path: String, size: Int
    ) async throws -> (partialSize: Int, task: DownloadTask, log: DownloadLog) {
        let (first, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        let log = DownloadLog()
        let second = try fixture.session.downloadTask(withResumeData: data, completionHandler: log.handler)
        second.resume()
        try await fixture.recorder.waitForCompletions(2)
        return (partialSize, second, log)
    }

    @Test("download(resumingWith:to:): the async form continues from the resume data with a 206")
    func asyncResume() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "async"))"
        let (first, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        let destination = scratch.url.appendingPathComponent("resumed-async.bin")
        let (fileURL, response) = try await fixture.session.download(resumingWith: data, to: destination)
        #expect(fileURL == destination)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        let resumed = try #require(fixture.server.requests(forPath: "/bytes/\(size)").last)
        #expect(resumed.headerValue("Range") == "bytes=\(partialSize)-")
        try await fixture.tearDown()
    }

    @Test("cancelling the Swift task of download(resumingWith:to:) keeps the file and throws new resume data")
    func asyncResumeCancelledKeepsFile() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        // Every request's body waits at the gate once its first 256 KiB are out, until the test opens it: the
        // first is cancelled there, and the continuation waits there (with nothing more to send) for its cancel.
        let path = "/bytes/\(size)?chunkSize=16384&gate=async-cancel&gateAfter=262144"
        let (first, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        let destination = scratch.url.appendingPathComponent("paused.bin")
        let call = Task { try await fixture.session.download(resumingWith: data, to: destination) }
        // The continuation's request is at the server, its body held at the gate.
        try await fixture.server.waitForRequests(count: 2)
        call.cancel()
        let outcome = await call.result
        let thrown: HeraldError?
        switch outcome {
        case .success: thrown = nil
        case .failure(let error): thrown = error as? HeraldError
        }
        #expect(thrown?.code == .cancelled, "\(outcome)")
        // Before, the partial file the caller's resume data names was deleted, and no new data came.
        let newData = try #require(thrown?.resumeData)
        #expect((PatternFile.size(of: first.temporaryURL) ?? 0) >= partialSize)
        // The new data names that file: the session takes it as resume data of its own (and deletes the file).
        try fixture.session.discardResumeData(newData)
        #expect(PatternFile.size(of: first.temporaryURL) == nil)
        fixture.server.openGate("async-cancel")
        try await fixture.tearDown()
    }

    @Test("resume data of a download behind a redirect continues from where the bytes came from")
    func resumeBehindRedirect() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        let target = "/bytes/\(size)?\(stoppedBodyQuery(key: "behind-redirect"))"
        let encoded = try #require(
            fixture.server.url(target).absoluteString.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics))
        let (_, resumeData, _) = try await cancelMidway(fixture, path: "/redirect-to?url=\(encoded)", size: size)
        let data = try #require(resumeData)
        let destination = scratch.url.appendingPathComponent("behind-redirect.bin")
        let (_, response) = try await fixture.session.download(resumingWith: data, to: destination)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        // The redirect was asked once, by the first attempt; the continuation went straight to the file.
        #expect(fixture.server.requests(forPath: "/redirect-to").count == 1)
        #expect(fixture.server.requests(forPath: "/bytes/\(size)").last?.headerValue("Range") != nil)
        try await fixture.tearDown()
    }

    @Test("resume data of a download a redirect took to another origin sends no credential there, the session's either")
    func resumeBehindCrossOriginRedirectDropsCredentials() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer session-secret"]
        let fixture = try await SessionFixture.make(configuration: configuration)
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)"
        // Another origin for the same loopback server: another host name.
        let target = try #require(
            URL(
                string: "http://localhost:\(fixture.server.port)\(path)?\(stoppedBodyQuery(key: "cross-origin-resume"))"
            ))
        let encoded = try #require(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let (_, resumeData, _) = try await cancelMidway(fixture, path: "/redirect-to?url=\(encoded)", size: size)
        let data = try #require(resumeData)
        let destination = scratch.url.appendingPathComponent("cross-origin.bin")
        let (_, response) = try await fixture.session.download(resumingWith: data, to: destination)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        #expect(fixture.server.requests(forPath: "/redirect-to").first?.headerValue("Authorization") != nil)
        let requests = fixture.server.requests(forPath: path)
        #expect(requests.count == 2)
        #expect(requests.last?.headerValue("Range") != nil)
        #expect(requests.allSatisfy { $0.headerValue("Authorization") == nil })
        try await fixture.tearDown()
    }

    @Test("resume data that left its origin keeps credentials behind on a retry that starts the file over")
    func crossOriginResumeRetriedFromScratchSendsNoCredential() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer session-secret"]
        let fixture = try await SessionFixture.make(configuration: configuration)
        fixture.session.interceptor = Interceptor(
            retriers: [RetryPolicy(retryLimit: 2, backoffScale: 0.01, maximumBackoff: 0.05)])
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 200_000
        let partial = scratch.url.appendingPathComponent("download-1-left-origin.part")
        try Data(TestServer.expectedBytes(in: 0..<1000)).write(to: partial)
        // The resume data a redirect to this origin left: its server ignores ranges and names no validator, and its
        // first answer breaks off, so the attempt after it can't continue the file and starts it over.
        let path = "/bytes/\(size)"
        let url = "http://localhost:\(fixture.server.port)\(path)?ranges=0&validators=0&key=left-origin&dropAfter=50000"
        let fields: [String: Any] = [
            "format": "herald.download-resume-data", "version": 1, "url": url, "headers": [[String]](),
            "bytesReceived": 1000, "entityTag": "\"herald-bytes-\(size)\"", "partialFilePath": partial.path,
            "leftOrigin": true,
        ]
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            withResumeData: try JSONSerialization.data(withJSONObject: fields), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let call = try #require(log.all.first)
        #expect(call.error == nil, "\(String(describing: call.error))")
        let requests = fixture.server.requests(forPath: path)
        #expect(requests.count == 2)
        // Before, the attempt that started over sent the session's credentials to the origin the redirect had led to.
        #expect(requests.allSatisfy { $0.headerValue("Authorization") == nil })
        let file = try #require(call.fileURL)
        #expect(try PatternFile.matches(file, count: size))
        try? FileManager.default.removeItem(at: file)
        try await fixture.tearDown()
    }

    @Test("discardResumeData deletes the partial file the data names, refuses one a task continues, and other data")
    func discardResumeData() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let (first, resumeData, _) = try await cancelMidway(
            fixture, path: "/bytes/\(size)?\(stoppedBodyQuery(key: "discarded"))", size: size)
        let data = try #require(resumeData)
        #expect(FileManager.default.fileExists(atPath: first.temporaryURL.path))
        // While a task continues the file, it stays.
        let continuing = try fixture.session.downloadTask(withResumeData: data)
        let refused = #expect(throws: HeraldError.self) { try fixture.session.discardResumeData(data) }
        #expect(refused?.code == .cannotResume)
        #expect(FileManager.default.fileExists(atPath: first.temporaryURL.path))
        continuing.cancel()
        try await fixture.recorder.waitForCompletions(2)
        // A cancelled continuation deletes its file itself: the data names none now.
        #expect(!FileManager.default.fileExists(atPath: first.temporaryURL.path))
        #expect(throws: HeraldError.self) { try fixture.session.discardResumeData(data) }
        // Data Herald didn't make, or naming a file it didn't make, deletes nothing.
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("herald-keep-\(UUID().uuidString)")
        try Data("keep".utf8).write(to: other)
        defer { try? FileManager.default.removeItem(at: other) }
        var forged = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        forged["partialFilePath"] = other.path
        let forgedData = try JSONSerialization.data(withJSONObject: forged)
        #expect(throws: HeraldError.self) { try fixture.session.discardResumeData(forgedData) }
        #expect(throws: HeraldError.self) { try fixture.session.discardResumeData(Data("{}".utf8)) }
        #expect(FileManager.default.fileExists(atPath: other.path))
        try await fixture.tearDown()
    }

    @Test("discardResumeData deletes an unused partial file")
    func discardUnusedResumeData() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let (first, resumeData, _) = try await cancelMidway(
            fixture, path: "/bytes/\(size)?\(stoppedBodyQuery(key: "discarded-unused"))", size: size)
        let data = try #require(resumeData)
        #expect(FileManager.default.fileExists(atPath: first.temporaryURL.path))
        try fixture.session.discardResumeData(data)
        #expect(!FileManager.default.fileExists(atPath: first.temporaryURL.path))
        // The data can't be continued now.
        #expect(throws: HeraldError.self) { try fixture.session.downloadTask(withResumeData: data) }
        try await fixture.tearDown()
    }

    @Test("resume data whose URL now redirects follows the redirect and continues the file there")
    func resumeWhereTheURLNowRedirects() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        let target = "/bytes/\(size)?\(stoppedBodyQuery(key: "now-redirects"))"
        let (first, resumeData, _) = try await cancelMidway(fixture, path: target, size: size)
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        // The same resume data, its URL moved behind a redirect to where the bytes are.
        let original = try #require(resumeData)
        var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        let encoded = try #require(
            fixture.server.url(target).absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        object["url"] = fixture.server.url("/redirect-to?url=\(encoded)").absoluteString
        let moved = try JSONSerialization.data(withJSONObject: object)
        let resumes = Locked<[String]>([])
        fixture.session.downloadTaskDidResume = { _, offset, expected in
            resumes.withLock { $0.append("\(offset)/\(expected.map(String.init) ?? "unknown")") }
        }
        let destination = scratch.url.appendingPathComponent("moved.bin")
        let (_, response) = try await fixture.session.download(resumingWith: moved, to: destination)
        #expect(response.statusCode == 206)
        // Once, where the body continues the file: the redirect on the way starts none (it was reported at 0).
        #expect(resumes.withLock { $0 } == ["\(partialSize)/\(size)"])
        #expect(try PatternFile.matches(destination, count: size))
        #expect(
            fixture.server.requests(forPath: "/bytes/\(size)").last?.headerValue("Range") == "bytes=\(partialSize)-")
        try await fixture.tearDown()
    }

    @Test(
        "a resume refused for good (404, 410) deletes the partial file and gives no resume data; a 403 or 503 keeps both",
        arguments: [(404, false), (410, false), (403, true), (503, true)])
    func resumeRefusedForGood(status: Int, keeps: Bool) async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        let (first, resumeData, _) = try await cancelMidway(
            fixture, path: "/bytes/\(size)?\(stoppedBodyQuery(key: "refused-\(status)"))", size: size)
        let partial = first.temporaryURL
        #expect(FileManager.default.fileExists(atPath: partial.path))
        // The same resume data, its URL now answering with the status.
        let original = try #require(resumeData)
        var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        object["url"] = fixture.server.url("/status/\(status)").absoluteString
        let moved = try JSONSerialization.data(withJSONObject: object)
        let failure = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.download(
                resumingWith: moved, to: scratch.url.appendingPathComponent("refused.bin"))
        }
        #expect(failure?.statusCode == status)
        // Kept, the resume data would be refused the same way each time it is used.
        #expect((failure?.resumeData != nil) == keeps)
        #expect(FileManager.default.fileExists(atPath: partial.path) == keeps)
        if keeps, let again = failure?.resumeData { try fixture.session.discardResumeData(again) }
        try await fixture.tearDown()
    }

    @Test("a download of a caller's Range gives no resume data: continuing would splice two parts")
    func callersRangeIsNotResumed() async throws {
        let fixture = try await SessionFixture.make()
        var request = Request(url: fixture.server.url("/bytes/\(Self.rangeSize)?chunkSize=16384&delayMs=20"))
        request.headers.add(name: "Range", value: "bytes=\(Self.rangeSize / 2)-")
        #expect(try await Self.resumeDataOfRangeCancelled(request, on: fixture) == nil)
        try await fixture.tearDown()
    }

    private static let rangeSize = 2 * 1024 * 1024

    /// Runs a download of `request` (answered `206`), cancels it with resume data after 128 KiB, and returns the
    /// data once the task completed.
    private static func resumeDataOfRangeCancelled(
        _ request: Request, on fixture: SessionFixture
    ) async throws -> Data? {
        let resumeData = OneShot<Data?>()
        let cancel = ActionAtProgress<DownloadTask>(atLeast: 128 * 1024) {
            $0.cancel(byProducingResumeData: { resumeData.send($0) })
        }
        let task = try fixture.session.downloadTask(with: request, progress: cancel.handler)
        cancel.attach(task)
        task.resume()
        let data = try await resumeData.value()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.server.requests(forPath: "/bytes/\(rangeSize)").first?.responseStatus == 206)
        return data
    }

    @Test("a 206 the server sent unasked, starting past byte 0, gives no resume data: continuing would splice")
    func unaskedRangeIsNotResumed() async throws {
        let fixture = try await SessionFixture.make()
        let size = Self.rangeSize
        // No Range asked for; the server answers bytes from the middle to the end, with a strong ETag.
        let request = Request(
            url: fixture.server.url("/bytes/\(size)?chunkSize=16384&delayMs=20&unaskedRangeStart=\(size / 2)"))
        // Before, the resume data asked for the rest from the file's byte count, spliced onto the middle.
        #expect(try await Self.resumeDataOfRangeCancelled(request, on: fixture) == nil)
        try await fixture.tearDown()
    }

    @Test("a download that asked for no range fails when answered with part of the file; a 206 of all of it succeeds")
    func unaskedPartFails() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 65536
        // Before, the second half was moved to the destination as the downloaded file, and the task succeeded.
        let half = scratch.url.appendingPathComponent("half.bin")
        let error = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.download(
                for: Request(url: fixture.server.url("/bytes/\(size)?unaskedRangeStart=\(size / 2)")), to: half)
        }
        #expect(error?.code == .badServerResponse)
        #expect(error?.statusCode == 206)
        #expect(error?.message.contains("bytes \(size / 2)-\(size - 1)/\(size)") == true)
        // A part that doesn't start the file can't be continued: no resume data, and no file kept for it.
        #expect(error?.resumeData == nil)
        #expect(!FileManager.default.fileExists(atPath: half.path))
        // Bytes 0 to the end, in a 206: the whole file.
        let whole = scratch.url.appendingPathComponent("whole.bin")
        let (_, response) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/bytes/\(size)?unaskedRangeStart=0")), to: whole)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(whole, count: size))
        // A Range the adapter added: the part is what was asked for, and is the download's file.
        fixture.session.interceptor = Interceptor(adapt: { request, _ in
            var request = request
            request.headers.replaceOrAdd(name: "Range", value: "bytes=0-99")
            return request
        })
        let part = scratch.url.appendingPathComponent("part.bin")
        let (_, partial) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/bytes/\(size)")), to: part)
        #expect(partial.statusCode == 206)
        #expect(try Data(contentsOf: part).count == 100)
        try await fixture.tearDown()
    }

    @Test("a download behind a redirect counts only its file's bytes: the redirect's body is no progress")
    func redirectBodyIsNoProgress() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 65536
        let writes = Locked<[(written: Int64, total: Int64)]>([])
        fixture.session.downloadTaskDidWriteData = { _, written, total, _ in
            writes.withLock { $0.append((written, total)) }
        }
        let encoded = try #require(
            fixture.server.url("/bytes/\(size)").absoluteString.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics))
        let destination = scratch.url.appendingPathComponent("redirected.bin")
        _ = try await fixture.session.download(
            for: Request(url: fixture.server.url("/redirect-to?url=\(encoded)")), to: destination)
        let all = writes.withLock { $0 }
        #expect(all.reduce(0) { $0 + $1.written } == Int64(size))
        #expect(all.map(\.total) == all.map(\.total).sorted())
        #expect(try PatternFile.matches(destination, count: size))
        try await fixture.tearDown()
    }

    @Test(
        "on a concurrent completion queue of the caller's, the resume data handler has run before the completion handler"
    )
    func resumeDataHandlerFirstOnConcurrentQueue() async throws {
        let fixture = try await SessionFixture.make()
        let queue = DispatchQueue(label: "test.concurrent-completions", attributes: .concurrent)
        let session = SessionManager(notificationCenter: fixture.center, completionQueue: queue)
        defer { session.invalidate(cancelingTasks: true) }
        let order = Locked<[String]>([])
        let produced = Locked<Data?>(nil)
        let cancel = ActionAtProgress<DownloadTask>(atLeast: 256 * 1024) { task in
            task.cancel(byProducingResumeData: { data in
                produced.withLock { $0 = data }
                // Storing the data takes a while (the simulated work of a real handler, not a wait): the completion
                // handler, which may read what it stored, must not overtake it.
                usleep(50_000)
                order.withLock { $0.append(data == nil ? "no resume data" : "resume data") }
            })
        }
        let size = 2 * 1024 * 1024
        let task = try session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(size)?\(stoppedBodyQuery(key: "concurrent-queue"))")),
            progress: cancel.handler,
            completionHandler: { _, _, error in
                order.withLock { $0.append("completion: \(error?.code.description ?? "no error")") }
            })
        cancel.attach(task)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // The completion handler runs before `taskDidComplete` is posted: both entries are in.
        #expect(order.withLock { $0 } == ["resume data", "completion: cancelled"])
        // The partial file the resume data keeps goes with it.
        try session.discardResumeData(try #require(produced.withLock { $0 }))
        try await fixture.tearDown()
    }

    @Test("cancel with resume data, then resume with Range and If-Range: the file is identical")
    func roundTrip() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "resumed"))"
        let (first, resumeData, firstLog) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        #expect(firstLog.all.first?.error?.code == .cancelled)
        #expect(fixture.recorder.timeline(ofTask: first.taskIdentifier) == [.resume, .complete])
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        #expect(partialSize > 0 && partialSize < size)

        let destination = scratch.url.appendingPathComponent("resumed.bin")
        let hookCalls = Locked<(resumes: [String], written: Int64, lastTotal: Int64)>(([], 0, 0))
        fixture.session.downloadTaskDidResume = { _, offset, expected in
            hookCalls.withLock { $0.resumes.append("\(offset)/\(expected ?? -1)") }
        }
        fixture.session.downloadTaskDidWriteData = { _, written, total, _ in
            hookCalls.withLock {
                $0.written += written
                $0.lastTotal = total
            }
        }
        let log = DownloadLog()
        let second = try fixture.session.downloadTask(
            withResumeData: data, destination: { _, _ in destination }, completionHandler: log.handler)
        #expect(second.temporaryURL == first.temporaryURL)
        second.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(fixture.recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .complete])
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        // The server counts a chunk as sent in its write's completion, which can run after the client has read
        // it (seen under load): wait for the server's record to settle before reading it.
        try await fixture.server.waitUntil(timeout: .seconds(10)) { statistics in
            statistics.requests.filter { $0.path == "/bytes/\(size)" }.allSatisfy(\.isComplete)
        }
        let requests = fixture.server.requests(forPath: "/bytes/\(size)")
        #expect(requests.count == 2)
        let resumed = try #require(requests.last)
        #expect(resumed.headerValue("Range") == "bytes=\(partialSize)-")
        #expect(resumed.headerValue("If-Range") == "\"herald-bytes-\(size)\"")
        #expect(resumed.responseStatus == 206)
        #expect(resumed.bodyBytesSent == size - partialSize)
        let hooks = hookCalls.withLock { $0 }
        #expect(hooks.resumes == ["\(partialSize)/\(size)"])
        #expect(hooks.written == Int64(size - partialSize))
        #expect(hooks.lastTotal == Int64(size))
        #expect(second.downloadProgress.completedUnitCount == Int64(size))
        #expect(second.downloadProgress.totalUnitCount == Int64(size))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("resuming against a server that ignores Range restarts the file from zero: identical, not spliced")
    func serverIgnoresRange() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let size = 2 * 1024 * 1024
        let (_, resumeData, _) = try await cancelMidway(
            fixture, path: "/bytes/\(size)?ranges=0&\(stoppedBodyQuery(key: "ignores-range"))", size: size)
        let data = try #require(resumeData)
        let destination = scratch.url.appendingPathComponent("restarted.bin")
        let log = DownloadLog()
        let second = try fixture.session.downloadTask(
            withResumeData: data, destination: { _, _ in destination }, completionHandler: log.handler)
        second.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 200)
        #expect(try PatternFile.matches(destination, count: size))
        try await fixture.server.waitUntil(timeout: .seconds(10)) { statistics in
            statistics.requests.filter { $0.path == "/bytes/\(size)" }.allSatisfy(\.isComplete)
        }
        let resumed = try #require(fixture.server.requests(forPath: "/bytes/\(size)").last)
        #expect(resumed.headerValue("Range") != nil)
        #expect(resumed.bodyBytesSent == size)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("a 206 declaring Int64.max bytes after the partial file fails with badServerResponse, without a trap")
    func impossibleDeclaredLength() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "lying-length"))&partialLength=\(Int64.max)"
        let resumes = Locked<[String]>([])
        fixture.session.downloadTaskDidResume = { _, offset, expected in
            resumes.withLock { $0.append("\(offset)/\(expected.map(String.init) ?? "unknown")") }
        }
        let (partialSize, second, log) = try await stopThenContinue(fixture, path: path, size: size)
        let error = try #require(log.all.first?.error)
        #expect(error.code == .badServerResponse)
        // A single part's length is its range's: refused before the sum with the offset could overflow.
        #expect(error.message.contains("declares \(Int64.max) body bytes for bytes \(partialSize)-"), "\(error)")
        #expect(fixture.recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .complete])
        #expect(fixture.server.requests(forPath: "/bytes/\(size)").last?.responseStatus == 206)
        // A refused answer starts no body: the hook is not called (it was, with an unknown length, before).
        #expect(resumes.withLock { $0 }.isEmpty)
        try await fixture.tearDown()
    }

    @Test("a 206 whose Content-Length is not its range's size is refused; the partial file stays as it was")
    func rangeAndLengthDisagree() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "short-length"))&partialLength=1000&partialBody=1000"
        let (partialSize, second, log) = try await stopThenContinue(fixture, path: path, size: size)
        let error = try #require(log.all.first?.error)
        #expect(error.code == .badServerResponse)
        #expect(error.message.contains("declares 1000 body bytes for bytes \(partialSize)-\(size - 1)"), "\(error)")
        // Nothing of the short part reached the file, and it can still be continued.
        #expect(try PatternFile.matches(second.temporaryURL, count: partialSize))
        #expect(error.resumeData != nil)
        try await fixture.tearDown()
    }

    @Test("a 206 whose body ends cleanly short of its Content-Range fails; the bytes that came are kept to resume")
    func rangeEndsShort() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "short-body"))&chunked=1&partialBody=100000"
        let (partialSize, second, log) = try await stopThenContinue(fixture, path: path, size: size)
        // It completed without an error before, its file 1.9 MiB short of the representation.
        let error = try #require(log.all.first?.error, "\(log.all)")
        #expect(error.code == .networkConnectionLost)
        #expect(error.message.contains("ended \(size - partialSize - 100_000) bytes short of its range"), "\(error)")
        #expect(log.all.first?.fileURL == nil)
        #expect(try PatternFile.matches(second.temporaryURL, count: partialSize + 100_000))
        let continued = try #require(error.resumeData)
        let fields = try #require(try JSONSerialization.jsonObject(with: continued) as? [String: Any])
        #expect((fields["bytesReceived"] as? NSNumber)?.intValue == partialSize + 100_000)
        try await fixture.tearDown()
    }

    @Test("a download continued by a 206 without validators, stopped again, still gives resume data that finishes it")
    func rangeWithoutValidatorsResumesAgain() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let size = 2 * 1024 * 1024
        // The 200 names its version; the 206 answers the If-Range but repeats neither validator.
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "bare"))&bareRanges=1"
        let (first, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let partialSize = try #require(PatternFile.size(of: first.temporaryURL))
        // The continuation asks a URL whose first request waits at a gate of its own 64 KiB further on, where it
        // is stopped: the same representation (the same validators), under another key.
        let firstData = try #require(resumeData)
        var fields = try #require(try JSONSerialization.jsonObject(with: firstData) as? [String: Any])
        let gated =
            "/bytes/\(size)?chunkSize=16384&gate=bare-2&gateAfter=\(partialSize + 65_536)&key=bare-2&bareRanges=1"
        fields["url"] = fixture.server.url(gated).absoluteString
        let data = try JSONSerialization.data(withJSONObject: fields)
        let again = OneShot<Data?>()
        let stop = ActionAtProgress<DownloadTask>(atLeast: Int64(partialSize + 16_384)) {
            $0.cancel(byProducingResumeData: { again.send($0) })
        }
        let second = try fixture.session.downloadTask(withResumeData: data, progress: stop.handler)
        stop.attach(second)
        second.resume()
        // Before, a 206 without validators gave no resume data, and the partial file was deleted.
        let secondData = try #require(try await again.value())
        try await fixture.recorder.waitForCompletions(2)
        let destination = scratch.url.appendingPathComponent("bare.bin")
        let (_, response) = try await fixture.session.download(resumingWith: secondData, to: destination)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        try await fixture.tearDown()
    }

    @Test("resume data a live task of the session already continues is refused: one partial file, one writer")
    func oneTaskPerPartialFile() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "twice"))"
        let (_, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        let log = DownloadLog()
        let first = try fixture.session.downloadTask(withResumeData: data, completionHandler: log.handler)
        // A second tap on "resume": before, a second task opened the same file, and its cancel deleted it.
        let error = #expect(throws: HeraldError.self) { try fixture.session.downloadTask(withResumeData: data) }
        #expect(error?.code == .cannotResume)
        #expect(error?.message.contains("Task \(first.taskIdentifier)") == true, "\(String(describing: error))")
        first.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(log.all.first?.error == nil)
        let fileURL = try #require(log.all.first?.fileURL)
        #expect(try PatternFile.matches(fileURL, count: size))
        try? FileManager.default.removeItem(at: fileURL)
        try await fixture.tearDown()
    }

    @Test("resume data a task of another session continues is refused there too: one writer per file in the process")
    func oneTaskPerPartialFileAcrossSessions() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let path = "/bytes/\(size)?\(stoppedBodyQuery(key: "two-sessions"))"
        let (_, resumeData, _) = try await cancelMidway(fixture, path: path, size: size)
        let data = try #require(resumeData)
        let log = DownloadLog()
        let first = try fixture.session.downloadTask(withResumeData: data, completionHandler: log.handler)
        let error = #expect(throws: HeraldError.self) { try other.session.downloadTask(withResumeData: data) }
        #expect(error?.code == .cannotResume)
        first.resume()
        try await fixture.recorder.waitForCompletions(2)
        let fileURL = try #require(log.all.first?.fileURL)
        #expect(try PatternFile.matches(fileURL, count: size))
        try? FileManager.default.removeItem(at: fileURL)
        try await other.tearDown()
        try await fixture.tearDown()
    }

    @Test("tasks made from one resume data at once on many threads: exactly one is made, and it finishes the file")
    func oneTaskPerPartialFileAcrossThreads() async throws {
        let fixture = try await SessionFixture.make()
        let size = 2 * 1024 * 1024
        let (_, resumeData, _) = try await cancelMidway(
            fixture, path: "/bytes/\(size)?\(stoppedBodyQuery(key: "racing"))", size: size)
        let data = try #require(resumeData)
        let made = Locked<[DownloadTask]>([])
        let refusals = Locked<[HeraldError.Code]>([])
        // Before, the check and the listing were apart: threads that checked before any was listed all made one.
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            do {
                let task = try fixture.session.downloadTask(withResumeData: data)
                made.withLock { $0.append(task) }
            } catch {
                refusals.withLock { $0.append((error as? HeraldError)?.code ?? .internal) }
            }
        }
        #expect(made.withLock { $0.count } == 1)
        #expect(refusals.withLock { $0 } == Array(repeating: .cannotResume, count: 15))
        let task = try #require(made.withLock { $0.first })
        task.resume()
        try await fixture.recorder.waitForCompletions(2)
        #expect(task.error == nil)
        try await fixture.tearDown()
    }

    @Test("corrupt, foreign or orphaned resume data is refused with cannotResume when the task is created")
    func badResumeData() async throws {
        let fixture = try await SessionFixture.make()
        let foreign = Data(#"{"NSURLSessionResumeInfoVersion":2}"#.utf8)
        let orphan = Data(
            (#"{"format":"herald.download-resume-data","version":1,"url":"http://127.0.0.1:1/x","headers":[],"#
                + #""bytesReceived":10,"entityTag":"\"e\"","partialFilePath":"/nonexistent/part"}"#).utf8)
        for data in [Data([0xFF, 0x00, 0x13]), Data(), foreign, orphan] {
            let error = #expect(throws: HeraldError.self) {
                try fixture.session.downloadTask(withResumeData: data)
            }
            #expect(error?.code == .cannotResume)
        }
        #expect(fixture.session.downloadTasks.isEmpty)
        try await fixture.tearDown()
    }

    @Test("cancel without resume data deletes the partial file; resume data of a task never started is nil")
    func cancelWithoutResumeData() async throws {
        let fixture = try await SessionFixture.make()
        let cancel = ActionAtProgress<DownloadTask> { $0.cancel() }
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/2097152?\(stoppedBodyQuery(key: "no-resume-data"))")),
            progress: cancel.handler)
        cancel.attach(task)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(task.error?.code == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: task.temporaryURL.path))

        let idle = try fixture.session.downloadTask(with: Request(url: fixture.server.url("/bytes/10")))
        let resumeData = OneShot<Data?>()
        idle.cancel(byProducingResumeData: { resumeData.send($0) })
        #expect(try await resumeData.value() == nil)
        try await fixture.recorder.waitForCompletions(2)
        #expect(fixture.recorder.timeline(ofTask: idle.taskIdentifier) == [.complete])
        try await fixture.tearDown()
    }

    /// A retrier that tells the test it was asked, then waits for the test's word before answering.
    private struct HeldRetrier: RequestInterceptor {
        let asked = OneShot<Void>()
        let answer = OneShot<RetryDecision>()

        func retry(_ context: RetryContext) async -> RetryDecision {
            asked.send(())
            return (try? await answer.value()) ?? .doNotRetry
        }
    }

    @Test(
        "a download cancelled or timed out while its retrier decides keeps its file and gives resume data that finishes it",
        arguments: [false, true])
    func stoppedWhileTheRetrierDecides(byTimeout: Bool) async throws {
        var configuration = SessionConfiguration.default
        // Long enough for the first attempt to reach its drop on a loaded machine: a timeout before the retrier is
        // asked isn't offered to it.
        if byTimeout { configuration.timeoutIntervalForResource = 8 }
        let fixture = try await SessionFixture.make(configuration: configuration)
        let size = 200_000
        let retrier = HeldRetrier()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(size)?dropAfter=120000&key=held-\(byTimeout)")))
        task.interceptor = retrier
        task.resume()
        try await retrier.asked.value()
        let resumeData: Data?
        if byTimeout {
            try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
            #expect(task.error?.code == .timedOut)
            resumeData = task.resumeDataAfterFailure
        } else {
            let produced = OneShot<Data?>()
            task.cancel(byProducingResumeData: { produced.send($0) })
            resumeData = try await produced.value()
            try await fixture.recorder.waitForCompletions(1)
        }
        retrier.answer.send(.retry)
        // Before, a cancel completed the task with an outcome that named no file: the resume data was nil and the file
        // deleted; and no deadline ran while the retrier decided, so the resource timeout never ended the task.
        let data = try #require(resumeData)
        #expect(PatternFile.size(of: task.temporaryURL) == 120_000)
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let destination = scratch.url.appendingPathComponent("held.bin")
        // Finished by a session without the short resource timeout: a loaded machine may take longer than that.
        let finisher = SessionManager(notificationCenter: fixture.center)
        defer { finisher.invalidate(cancelingTasks: true) }
        let (_, response) = try await finisher.download(resumingWith: data, to: destination)
        #expect(response.statusCode == 206)
        #expect(try PatternFile.matches(destination, count: size))
        try await fixture.tearDown()
    }
}
