import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The limits that protect the process from a server: response size in memory, response head
/// size, redirect count.
@Suite("Protective limits")
struct ProtectiveLimitTests {
    @Test("the defaults are safe: 512 MiB in memory, 256 KiB of head, 16 redirects")
    func defaults() {
        let configuration = SessionConfiguration()
        #expect(configuration.maximumResponseSize == 512 << 20)
        #expect(configuration.maximumHeaderSize == 256 << 10)
        #expect(configuration.maximumRedirects == 16)
    }

    // MARK: - response size

    private static func limited(responseSize: Int) -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.maximumResponseSize = responseSize
        return configuration
    }

    @Test("a body of exactly the maximum response size is delivered")
    func responseAtLimit() async throws {
        let fixture = try await SessionFixture.make(
            configuration: Self.limited(responseSize: 10_000), serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/10000?chunked=1&chunkSize=1000")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        #expect(log.all.first?.error == nil)
        #expect((log.all.first?.object as? Data)?.count == 10_000)
        try await fixture.tearDown()
    }

    @Test("a declared Content-Length over the maximum → responseTooLarge at the first byte")
    func declaredTooLarge() async throws {
        let harness = try await FaultHarness.make(configuration: Self.limited(responseSize: 10_000))
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/bytes/10001")), code: .responseTooLarge)
        #expect(call.object == nil)
    }

    @Test(
        "a chunked body's trailers are no part of the head: not among its fields, not counted against its limit",
        arguments: [false, true])
    func trailersAreNotTheHead(emptyBody: Bool) async throws {
        var configuration = SessionConfiguration()
        configuration.maximumHeaderSize = 1024
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        // An empty body: the trailer follows the head at once, before any body byte began the sink.
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/fault/trailers?bytes=3000\(emptyBody ? "&empty=1" : "")")))
        // Before, the 3,000-byte trailer went over the 1 KiB head limit after the whole body had arrived.
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == (emptyBody ? "" : "hello"))
        #expect(response.headers["X-Trailer"] == nil)
        try await fixture.tearDown()
    }

    @Test("lines that look like status lines among a head's fields or in its trailer start no response of their own")
    func forgedStatusLines() async throws {
        let cookies = CookieStore()
        var configuration = SessionConfiguration()
        configuration.httpCookieStore = cookies
        let fixture = try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer())
        let url = fixture.server.url("/fault/forged-status-lines")
        let (data, response) = try await fixture.session.data(for: Request(url: url))
        // Before, each such line began a new head: the response took the trailer's 503, its fields and no body.
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        #expect(response.headers["X-Real"] == "yes")
        #expect(response.headers["Content-Type"] == "text/plain")
        #expect(response.httpVersion == "HTTP/1.1")
        #expect(response.headers["Set-Cookie"] == nil)
        // The trailer's `Set-Cookie` was taken as a field of that head, and stored.
        #expect(cookies.cookies(for: url).isEmpty)
        try await fixture.tearDown()
    }

    @Test(
        "a 417 to Expect: 100-continue, which libcurl answers by sending the request again, is followed by its answer"
    )
    func expectationRefusedThenAnswered() async throws {
        let server = try ExpectationRefusingServer()
        defer { server.stop() }
        let session = SessionManager(notificationCenter: NotificationHub())
        session.responseSerializer = DataResponseSerializer()
        defer { session.invalidate(cancelingTasks: true) }
        let request = Request(
            url: try #require(URL(string: "http://127.0.0.1:\(server.port)/upload")), method: "POST",
            headers: ["Expect": "100-continue", "Content-Type": "text/plain"], body: Data("hello".utf8))
        let (data, response) = try await session.data(for: request)
        // Before, the answer to the request sent again was taken for a trailer of the 417's: the task completed
        // with the 417 and the 200's body.
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        #expect(server.requestLines == ["POST /upload HTTP/1.1", "POST /upload HTTP/1.1"])
    }

    @Test("Content-Length fields that differ are a bad server response; the same value twice frames the body")
    func conflictingLengths() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        // libcurl frames the body by the last field (2 bytes here); the first announced a length of 100.
        var thrown: HeraldError?
        do {
            _ = try await fixture.session.data(for: Request(url: fixture.server.url("/fault/two-lengths")))
        } catch {
            thrown = error
        }
        #expect(thrown?.code == .badServerResponse)
        #expect(thrown?.message.contains("Content-Length") == true)
        let (data, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/fault/two-lengths?first=2&second=2")))
        #expect(response.statusCode == 200)
        #expect(response.expectedContentLength == 2)
        #expect(data == Data("hi".utf8))
        try await fixture.tearDown()
    }

    @Test("a response allowed by the disposition hook, then over the maximum → responseTooLarge, not a hang")
    func tooLargeAfterDisposition() async throws {
        let fixture = try await SessionFixture.make(
            configuration: Self.limited(responseSize: 1000), serializer: DataResponseSerializer())
        // The body arrives with the head, waits while the hook decides, and goes over the limit when the
        // transfer continues: the abort happens inside libcurl's unpause.
        fixture.session.dataTaskDidReceiveResponse = { _, _ in .allow }
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/5000")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(log.all.first?.error?.code == .responseTooLarge)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a chunked body growing past the maximum → responseTooLarge, the transfer stopped, nothing kept")
    func streamedTooLarge() async throws {
        let harness = try await FaultHarness.make(configuration: Self.limited(responseSize: 64 << 10))
        let total = 64 << 20
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/bytes/\(total)?chunked=1&chunkSize=16384")), code: .responseTooLarge)
        #expect(call.object == nil)
        #expect(call.error?.curlCode == nil)
        // The server streams with backpressure, so once the client closed the connection it stopped well
        // short of the whole body (socket buffers hold a few MiB at most).
        #expect(harness.server.bodyBytesSent(forPath: "/bytes/\(total)") < total / 2)
    }

    @Test("the completion notification carries no body for responseTooLarge")
    func noBodyInNotification() async throws {
        let fixture = try await SessionFixture.make(
            configuration: Self.limited(responseSize: 1000), serializer: DataResponseSerializer())
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/5000?chunked=1&chunkSize=500")))
        task.resume()
        let events = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        let completion = try #require(events.compactMap(\.completion).first)
        #expect(completion.error?.code == .responseTooLarge)
        #expect(completion.responseData?.isEmpty ?? true)
        try await fixture.tearDown()
    }

    @Test("download tasks stream to a file and are not limited by the maximum response size")
    func downloadsNotLimited() async throws {
        let fixture = try await SessionFixture.make(configuration: Self.limited(responseSize: 1000))
        let destination = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-limit-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: destination) }
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/5000")), destination: { _, _ in destination })
        task.resume()
        let events = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        let completion = try #require(events.compactMap(\.completion).first)
        #expect(completion.error == nil)
        let size = try FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int
        #expect(size == 5000)
        try await fixture.tearDown()
    }

    // MARK: - header size

    @Test("a single 1 MiB header line → badServerResponse (libcurl's 100 KiB line limit, not outOfMemory)")
    func oneMebibyteHeader() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/huge-header?bytes=1048576")), code: .badServerResponse)
        #expect(call.error?.curlCode == 27)
    }

    @Test("a 1 MiB head in 50 KiB lines → badServerResponse from maximumHeaderSize")
    func manyLinesPastLimit() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/huge-header?bytes=1048576&lines=20")), code: .badServerResponse)
        #expect(call.error?.curlCode == nil)
        #expect(call.error?.message.contains("262144") == true)
    }

    @Test("a head over a small configured maximumHeaderSize → badServerResponse")
    func configuredHeaderLimit() async throws {
        var configuration = SessionConfiguration()
        configuration.maximumHeaderSize = 1024
        let harness = try await FaultHarness.make(configuration: configuration)
        try await harness.expectFailure(
            Request(url: harness.server.url("/fault/huge-header?bytes=8000&lines=4")), code: .badServerResponse)
    }

    @Test("with Herald's check off, libcurl's own 300 KiB head limit still applies → badServerResponse")
    func curlHeadLimit() async throws {
        var configuration = SessionConfiguration()
        configuration.maximumHeaderSize = 0
        let harness = try await FaultHarness.make(configuration: configuration)
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/huge-header?bytes=500000&lines=10")), code: .badServerResponse)
        #expect(call.error?.curlCode == 56)
    }

    @Test("a 200 KiB head (under both limits) is accepted with its fields")
    func largeHeadAccepted() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/huge-header?bytes=200000&lines=4")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.headers["X-Huge-3"]?.utf8.count == 50_000)
        #expect((call.object as? Data).map { String(decoding: $0, as: UTF8.self) } == "ok\n")
        try await fixture.tearDown()
    }

    // MARK: - redirects

    @Test("16 redirects are followed by default; the 17th → tooManyRedirects")
    func defaultRedirectCap() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let within = try fixture.session.dataTask(with: Request(url: fixture.server.url("/redirect/16")))
        let beyond = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/redirect/17")), completionHandler: log.handler)
        within.resume()
        beyond.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(60))
        #expect(within.error == nil)
        #expect(within.response?.statusCode == 200)
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .tooManyRedirects)
        #expect(fixture.recorder.timeline(ofTask: beyond.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a configured maximumRedirects of 2 stops the third redirect")
    func configuredRedirectCap() async throws {
        var configuration = SessionConfiguration()
        configuration.maximumRedirects = 2
        let harness = try await FaultHarness.make(configuration: configuration)
        try await harness.expectFailure(Request(url: harness.server.url("/redirect/3")), code: .tooManyRedirects)
        #expect(harness.server.requests.filter { $0.path.hasPrefix("/redirect/") }.count == 3)
    }
}
