import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Streamed uploads of a declared length: the caller's Content-Length, exactly that many bytes")
struct StreamedUploadLengthTests {
    /// A stream of the test server's pattern bytes `0..<count`.
    static func patternStream(count: Int) -> BodyStream { MultipartTests.patternStream(count: count) }

    static func echoed(_ call: CompletionLog.Call?) throws -> EchoedRequest {
        try JSONDecoder().decode(EchoedRequest.self, from: try #require(call?.object as? Data))
    }

    /// Uploads `stream` as a `POST` to `path` with `Content-Length: declared` and returns the completion.
    static func upload(
        _ stream: BodyStream, declared: String, to path: String = "/echo", fixture: SessionFixture
    ) async throws -> (CompletionLog.Call, UploadTask) {
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(
                url: fixture.server.url(path), method: "POST", headers: ["Content-Length": declared]),
            bodyProvider: stream, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        return (try #require(log.all.first), task)
    }

    @Test("a declared length is sent as Content-Length, not chunked, and the body arrives whole")
    func declaredLengthSent() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 300_000
        let (call, task) = try await Self.upload(Self.patternStream(count: size), declared: "\(size)", fixture: fixture)
        #expect(call.error == nil)
        let echoed = try Self.echoed(call)
        #expect(echoed.headers["content-length"] == "\(size)")
        #expect(echoed.headers["transfer-encoding"] == nil)
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(task.uploadProgress.totalUnitCount == Int64(size))
        #expect(task.uploadProgress.completedUnitCount == Int64(size))
        try await fixture.tearDown()
    }

    @Test("without a declared length the body goes in chunks, as before")
    func chunkedWithoutLength() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST"),
            bodyProvider: Self.patternStream(count: 1000), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let echoed = try Self.echoed(log.all.first)
        #expect(echoed.headers["transfer-encoding"] == "chunked")
        #expect(echoed.headers["content-length"] == nil)
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<1000))
        try await fixture.tearDown()
    }

    @Test("a 307 resends a declared length from the fresh stream taskNeedNewBodyStream gives")
    func redirectKeepsLength() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let size = 200_000
        let asked = Locked(0)
        fixture.session.taskNeedNewBodyStream = { _ in
            asked.withLock { $0 += 1 }
            return Self.patternStream(count: size)
        }
        let (call, _) = try await Self.upload(
            Self.patternStream(count: size), declared: "\(size)", to: "/redirect-to?url=/echo&status=307",
            fixture: fixture)
        #expect(call.error == nil)
        let echoed = try Self.echoed(call)
        #expect(echoed.headers["content-length"] == "\(size)")
        #expect(echoed.headers["transfer-encoding"] == nil)
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<size))
        #expect(asked.withLock { $0 } == 1)
        try await fixture.tearDown()
    }

    @Test("a stream shorter or longer than its declared length fails the task with bodyStream", arguments: [999, 1001])
    func wrongLengthFails(actual: Int) async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let (call, _) = try await Self.upload(Self.patternStream(count: actual), declared: "1000", fixture: fixture)
        let error = try #require(call.error)
        #expect(error.code == .bodyStream)
        #expect(
            error.message.contains(actual < 1000 ? "ended at byte 999 of the 1000" : "more than the 1000 bytes"),
            "\(error)")
        try await fixture.tearDown()
    }

    @Test(
        "a Content-Length that is not one decimal number is refused when the task is made",
        arguments: ["abc", "-1", "12 34", "", "99999999999999999999"])
    func invalidLengthRefused(value: String) async throws {
        let fixture = try await SessionFixture.make()
        #expect {
            _ = try fixture.session.uploadTask(
                withStreamedRequest: Request(
                    url: fixture.server.url("/echo"), method: "POST", headers: ["Content-Length": value]),
                bodyProvider: Self.patternStream(count: 10))
        } throws: { ($0 as? HeraldError)?.code == .invalidRequest }
        try await fixture.tearDown()
    }

    @Test("Content-Length fields that disagree are refused; equal ones are one length")
    func repeatedFields() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        var disagreeing = HTTPHeaders()
        disagreeing.add(name: "Content-Length", value: "10")
        disagreeing.add(name: "content-length", value: "12")
        #expect {
            _ = try fixture.session.uploadTask(
                withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST", headers: disagreeing),
                bodyProvider: Self.patternStream(count: 10))
        } throws: { ($0 as? HeraldError)?.code == .invalidRequest }
        var agreeing = HTTPHeaders()
        agreeing.add(name: "Content-Length", value: "10")
        agreeing.add(name: "Content-Length", value: " 10")
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: fixture.server.url("/echo"), method: "POST", headers: agreeing),
            bodyProvider: Self.patternStream(count: 10), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let echoed = try Self.echoed(log.all.first)
        #expect(echoed.headers["content-length"] == "10")
        #expect(echoed.bodyBytes == TestServer.expectedBytes(in: 0..<10))
        try await fixture.tearDown()
    }
}
