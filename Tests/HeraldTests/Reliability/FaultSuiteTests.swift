import Foundation
import Herald
import HeraldTesting
import Testing

/// The fault suite: every way a network or a server can fail a request ends that request exactly
/// once with the right ``HeraldError/Code``, leaves the session's other tasks alone and leaves no socket
/// behind. The common checks live in ``FaultHarness/expectFailure(_:code:alsoCheckingPorts:sourceLocation:)``.
@Suite("Fault suite: each fault completes once, typed, isolated, without leaks")
struct FaultSuiteTests {
    @Test("connection refused → cannotConnect")
    func connectionRefused() async throws {
        let harness = try await FaultHarness.make()
        // A port bound by no listener: nothing accepts there.
        let closed = try RefusingPort()
        defer { closed.close() }
        let url = closed.url("/json")
        let call = try await harness.expectFailure(
            Request(url: url), code: .cannotConnect, alsoCheckingPorts: [closed.port])
        #expect(call.response == nil)
    }

    @Test("an unresolvable host → cannotFindHost")
    func unresolvableHost() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: URL(string: "http://\(FaultHarness.unresolvableHost)/json")!), code: .cannotFindHost)
        #expect(call.error?.curlCode == 6)
    }

    @Test("a reset before the response head → networkConnectionLost")
    func resetBeforeHeaders() async throws {
        let harness = try await FaultHarness.make()
        try await harness.expectFailure(
            Request(url: harness.server.url("/fault/reset-before-headers")), code: .networkConnectionLost)
    }

    @Test("a reset right after the response head → networkConnectionLost")
    func resetAfterHeaders() async throws {
        let harness = try await FaultHarness.make()
        try await harness.expectFailure(
            Request(url: harness.server.url("/fault/reset-mid-body?bytes=0&declared=1000")),
            code: .networkConnectionLost)
    }

    @Test("a reset in the middle of the body → networkConnectionLost, no partial body delivered")
    func resetMidBody() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/reset-mid-body?bytes=65536")), code: .networkConnectionLost)
        #expect(call.object == nil)
    }

    @Test("a server that stalls → timedOut after the request (idle) timeout")
    func stallRequestTimeout() async throws {
        let harness = try await FaultHarness.make()
        try await harness.expectFailure(
            Request(url: harness.server.url("/fault/stall"), timeoutInterval: 1), code: .timedOut)
    }

    @Test("a body still streaming when the resource timeout passes → timedOut, although bytes keep moving")
    func resourceTimeout() async throws {
        var configuration = SessionConfiguration()
        // Session-wide, so it also bounds the neighbour and the successor: generous enough for those to
        // finish on a loaded machine (under AddressSanitizer, beside the whole suite, the successor's
        // one small request once took more than 5 s), far shorter than the stream.
        configuration.timeoutIntervalForResource = 20
        let harness = try await FaultHarness.make(configuration: configuration)
        // 1,000 writes 100 ms apart: never idle, but ~100 s in all.
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/bytes/100000?chunkSize=100&delayMs=100")), code: .timedOut)
        #expect(call.error?.curlCode == 28)
    }

    @Test("a body shorter than its Content-Length → networkConnectionLost, never a short success")
    func truncatedBody() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/truncated?declared=1000&sent=10")), code: .networkConnectionLost)
        #expect(call.object == nil)
    }

    @Test("bad chunked encoding → badServerResponse, never a success")
    func badChunked() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/bad-chunked")), code: .badServerResponse)
        #expect(call.object == nil)
        // curl reports broken chunk framing as CURLE_RECV_ERROR (56); Herald says what happened.
        #expect(call.error?.curlCode == 56)
    }

    @Test("a reset while the body arrives → networkConnectionLost, never said to have broken while sending")
    func resetWhileReceiving() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/reset-mid-body?bytes=65536")), code: .networkConnectionLost)
        #expect(call.error?.message.contains("sending") == false, "\(call.error.map { "\($0)" } ?? "")")
    }

    @Test("a garbage status line → badServerResponse")
    func garbageStatus() async throws {
        let harness = try await FaultHarness.make()
        try await harness.expectFailure(
            Request(url: harness.server.url("/fault/garbage-status")), code: .badServerResponse)
    }

    @Test("a redirect loop (a URL that redirects to itself) → redirectLoop, detected before the hop limit")
    func redirectLoop() async throws {
        let harness = try await FaultHarness.make()
        let call = try await harness.expectFailure(
            Request(url: harness.server.url("/fault/redirect-loop")), code: .redirectLoop)
        // Herald follows redirects itself: the loop is seen before the request is sent again.
        #expect(call.error?.curlCode == nil)
        #expect(call.response?.statusCode == 302)
        #expect(harness.server.requests(forPath: "/fault/redirect-loop").count == 1)
    }

    @Test("a redirect loop's error, for a URL with credentials in it, names the URL without them")
    func redirectLoopRedactsCredentials() async throws {
        let harness = try await FaultHarness.make()
        var components = try #require(
            URLComponents(url: harness.server.url("/fault/redirect-loop"), resolvingAgainstBaseURL: false))
        components.user = "alice"
        components.password = "s3cretPW9"
        let call = try await harness.expectFailure(Request(url: try #require(components.url)), code: .redirectLoop)
        let error = try #require(call.error)
        // Before, the message quoted the redirect's URL as resolved against the request's, password and all.
        #expect(!error.message.contains("s3cretPW9"), "\(error.message)")
        #expect(!String(describing: error).contains("s3cretPW9"))
        #expect(error.message.contains("***:***@127.0.0.1"), "\(error.message)")
    }

    @Test("a slow sender (one byte per 100 ms) completes correctly")
    func slowSender() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/20?chunkSize=1&delayMs=100")),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(60))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(log.all.count == 1)
        #expect(log.all.first?.error == nil)
        #expect((log.all.first?.object as? Data).map(Array.init) == TestServer.expectedBytes(in: 0..<20))
        try await fixture.tearDown()
    }
}
