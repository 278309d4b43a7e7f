import Foundation
import HeraldNotifications
import Testing

@testable import Herald
@testable import HeraldEngine

/// The buffer between a streamed task's transfers and its consumer, fed by hand: what the consumer sees of
/// held responses, and how lines split across elements. No transfer runs: the task is never resumed.
@Suite("ResponseBodyBuffer and ResponseLines, fed by hand")
struct ResponseBodyBufferTests {
    static let url = URL(string: "http://127.0.0.1:9/stream")!

    /// A streamed task that is never resumed, and its buffer; dropping the stream cancels the task.
    private static func stream(
        policy: StreamBufferPolicy = .default
    ) throws -> (SessionManager, ResponseBodyBuffer, ResponseBodyStream) {
        let session = SessionManager(notificationCenter: NotificationHub())
        let (task, buffer) = try session.makeStreamedTask(with: Request(url: url), bufferPolicy: policy)
        return (session, buffer, ResponseBodyStream(consumer: StreamConsumer(buffer: buffer, task: task)))
    }

    private static func response(_ status: Int) -> HTTPResponse {
        HTTPResponse(url: url, statusCode: status, headers: [:])
    }

    private static func write(_ text: String, to buffer: ResponseBodyBuffer) {
        Array(text.utf8).withUnsafeBytes { buffer.write($0) }
    }

    @Test("lines split at CR, LF and CRLF wherever the elements break, the last line without an end too")
    func linesAcrossElements() async throws {
        let (session, buffer, body) = try Self.stream(
            policy: StreamBufferPolicy(highWatermark: 1 << 20, lowWatermark: 0, maximumChunkSize: 3))
        defer { session.invalidate(cancelingTasks: true) }
        buffer.headDidEnd(Self.response(200))
        // Elements of at most 3 bytes: "a\r\n" "b\rc" "\r\n\n" "d" split the CRLFs every way.
        Self.write("a\r\nb\rc\r\n\nd", to: buffer)
        buffer.finish(response: Self.response(200), error: nil)
        var lines: [String] = []
        for try await line in body.lines { lines.append(line) }
        #expect(lines == ["a", "b", "c", "", "d"])
    }

    @Test("many small elements are taken in order, across writes made while earlier ones are being taken")
    func manySmallElementsInOrder() async throws {
        let (session, buffer, body) = try Self.stream(
            policy: StreamBufferPolicy(highWatermark: 1 << 20, lowWatermark: 0, maximumChunkSize: 4))
        defer { session.invalidate(cancelingTasks: true) }
        buffer.headDidEnd(Self.response(200))
        let expected = Data((0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        var iterator = body.makeAsyncIterator()
        var received = Data()
        // 51,200 elements of four bytes; written in four parts, each after some of the last have been taken.
        for part in 0..<4 {
            expected[(part * (50 << 10))..<((part + 1) * (50 << 10))].withUnsafeBytes { buffer.write($0) }
            for _ in 0..<(part == 3 ? 0 : 5_000) {
                let chunk = try #require(try await iterator.next())
                #expect(chunk.count == 4)
                received.append(chunk)
            }
        }
        buffer.finish(response: Self.response(200), error: nil)
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == expected)
        #expect(buffer.waitingByteCount == 0)
    }

    @Test("a 2xx head is handed over before its body; the body's bytes follow in order, then the end")
    func headBeforeBody() async throws {
        let (session, buffer, body) = try Self.stream()
        defer { session.invalidate(cancelingTasks: true) }
        buffer.headDidEnd(Self.response(200))
        #expect(try await buffer.head().get().statusCode == 200)
        #expect(buffer.hasHandedOverHead)
        buffer.begin(Self.response(200))
        Self.write("hello ", to: buffer)
        Self.write("world", to: buffer)
        buffer.finish(response: Self.response(200), error: nil)
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        #expect(String(decoding: received, as: UTF8.self) == "hello world")
    }

    @Test(
        "writes become elements of at most the largest size, in order: small writes join the tail, whole elements of a large write follow it"
    )
    func elementBoundaries() async throws {
        let (session, buffer, body) = try Self.stream(
            policy: StreamBufferPolicy(highWatermark: 1 << 20, lowWatermark: 0, maximumChunkSize: 4))
        defer { session.invalidate(cancelingTasks: true) }
        buffer.headDidEnd(Self.response(200))
        Self.write("ab", to: buffer)
        Self.write("c", to: buffer)
        // Two whole elements and a remainder: after the tail "abc", then "defg" "hijk", then "lm" joins the tail.
        Self.write("defghijklm", to: buffer)
        Self.write("no", to: buffer)
        // Exactly one whole element, after the tail.
        Self.write("pqrs", to: buffer)
        buffer.finish(response: Self.response(200), error: nil)
        var elements: [String] = []
        for try await chunk in body { elements.append(String(decoding: chunk, as: UTF8.self)) }
        #expect(elements == ["abc", "defg", "hijk", "lmno", "pqrs"])
    }

    @Test("a redirect's body is held and dropped when the next response begins; a 4xx is handed over at the end")
    func heldResponses() async throws {
        let (session, buffer, body) = try Self.stream()
        defer { session.invalidate(cancelingTasks: true) }
        buffer.headDidEnd(Self.response(302))
        buffer.begin(Self.response(302))
        Self.write("moved", to: buffer)
        #expect(!buffer.hasHandedOverHead)
        #expect(buffer.waitingByteCount == 0)
        buffer.begin(Self.response(404))
        Self.write("not here", to: buffer)
        #expect(!buffer.hasHandedOverHead)
        buffer.finish(response: Self.response(404), error: nil)
        #expect(try await buffer.head().get().statusCode == 404)
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        #expect(String(decoding: received, as: UTF8.self) == "not here")
    }

    @Test("a held body that reaches the high watermark is handed over with its head")
    func heldBodyTooLarge() async throws {
        let (session, buffer, body) = try Self.stream(
            policy: StreamBufferPolicy(highWatermark: 8, lowWatermark: 0, maximumChunkSize: 4))
        defer { session.invalidate(cancelingTasks: true) }
        buffer.begin(Self.response(500))
        Self.write("0123456789", to: buffer)
        #expect(!buffer.hasHandedOverHead)
        // The write callback's question before the next read hands the held response over.
        let transfer = Transfer(
            request: session.transferRequest(for: Request(url: Self.url), body: nil), delegate: NoDelegate())
        #expect(buffer.isFull(pausing: transfer))
        #expect(buffer.hasHandedOverHead)
        #expect(buffer.waitingByteCount == 10)
        #expect(try await buffer.head().get().statusCode == 500)
        buffer.finish(response: Self.response(500), error: nil)
        var received = Data()
        var firstBytes: [UInt8] = []
        for try await chunk in body {
            // Every element is indexed from 0, as a 2xx body's are: a slice of the held body would trap here.
            #expect(chunk.startIndex == 0)
            if chunk.startIndex == 0 { firstBytes.append(chunk[0]) }
            received.append(chunk)
        }
        #expect(String(decoding: received, as: UTF8.self) == "0123456789")
        #expect(firstBytes == Array("048".utf8))
    }

    @Test("a cancellation drops the chunks still waiting: the consumer's next element is the error")
    func cancellationDropsWaitingChunks() async throws {
        let (session, buffer, body) = try Self.stream(
            policy: StreamBufferPolicy(highWatermark: 64, lowWatermark: 0, maximumChunkSize: 4))
        defer { session.invalidate(cancelingTasks: true) }
        buffer.begin(Self.response(200))
        Self.write("0123456789", to: buffer)
        #expect(buffer.waitingByteCount == 10)
        buffer.finish(response: Self.response(200), error: HeraldError(.cancelled, "cancelled"))
        #expect(buffer.waitingByteCount == 0)
        var received = Data()
        let error = await #expect(throws: HeraldError.self) {
            for try await chunk in body { received.append(chunk) }
        }
        #expect(error?.code == .cancelled)
        #expect(received.isEmpty)
    }

    @Test("a failure before any head fails the head with the task's error")
    func failureBeforeHead() async throws {
        let (session, buffer, body) = try Self.stream()
        defer { session.invalidate(cancelingTasks: true) }
        // Kept: dropping the stream would cancel the task, whose completion would end the buffer first.
        withExtendedLifetime(body) {
            buffer.finish(response: nil, error: HeraldError(.cannotConnect, "refused"))
        }
        guard case .failure(let error) = await buffer.head() else {
            Issue.record("the head did not fail")
            return
        }
        #expect(error.code == .cannotConnect)
    }
}

/// A transfer delegate that ignores everything: the buffer only keeps the transfer for its drain.
private final class NoDelegate: TransferDelegate {
    func transferDidBeginBody(at offset: Int64, expected: Int64?) {}
    func transferDidReceiveResponse(_ response: ResponseHead) {}
    func transferDidReceiveBytes(total received: Int64, expected: Int64?) {}
    func transferNeedsResponseDisposition(_ response: ResponseHead, transfer: Transfer) {}
    func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {}
    func transferDidSendBytes(_ count: Int64, total sent: Int64, expected: Int64?) {}
    func proceed(after outcome: TransferOutcome) {}
}
