import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// What the snippets of "Streaming responses" hand their data to: collected, so that the tests can check it.
final class StreamSink: Sendable {
    private let lines = Locked<[String]>([])
    private let bytes = Locked(0)

    func handle(_ line: String) { lines.withLock { $0.append(line) } }
    func process(_ chunk: Data) async throws { bytes.withLock { $0 += chunk.count } }

    var collectedLines: [String] { lines.withLock { $0 } }
    var byteCount: Int { bytes.withLock { $0 } }
}

/// The snippets of the DocC article "Streaming responses", run against the loopback server.
@Suite("StreamingResponses.md snippets")
struct StreamingSnippets {
    @Test("a body read line by line, and one read chunk by chunk with a larger buffer")
    func linesAndChunks() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        let sink = StreamSink()
        // doc-line: let url = URL(string: "https://logs.example.com/tail")!
        let url = server.url("/events/2?size=3")

        let (response, body) = try await session.bytes(for: Request(url: url))
        guard response.statusCode == 200 else { throw HeraldError(.unacceptableStatusCode, "\(response.statusCode)") }
        for try await line in body.lines {
            sink.handle(line)
        }

        #expect(sink.collectedLines.first == "id: 1")
        // doc-line: let archive = URL(string: "https://files.example.com/archive.tar")!
        let archive = server.url("/bytes/\(3 << 20)")

        let policy = StreamBufferPolicy(highWatermark: 4 << 20, lowWatermark: 1 << 20)
        let (_, chunks) = try await session.bytes(for: Request(url: archive), bufferPolicy: policy)
        for try await chunk in chunks {
            try await sink.process(chunk)
        }

        #expect(sink.byteCount == 3 << 20)
        try await server.shutdown()
    }

    @Test("the chunk closure, for code that isn't async")
    func closure() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        // doc-line: let url = URL(string: "https://files.example.com/archive.tar")!
        let url = server.url("/bytes/100000")
        let received = Locked(0)
        let done = OneShot<HeraldError?>()

        let task = try session.dataStreamTask(with: Request(url: url)) { event in
            switch event {
            case .response(let response): print("status", response.statusCode)
            case .chunk(let data): received.withLock { $0 += data.count }
            case .complete(let error): done.send(error)
            }
        }
        task.resume()

        #expect(try await done.value() == nil)
        #expect(received.withLock { $0 } == 100_000)
        try await server.shutdown()
    }

    @Test("server-sent events, and an observer of their reconnections")
    func events() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        let sink = StreamSink()
        let reconnections = Locked<[String]>([])
        // doc-line: let url = URL(string: "https://api.example.com/v1/updates")!
        let url = server.url("/events/3?dropEvery=2&retry=10")

        let token = session.notificationCenter.addObserver(for: .eventSourceWillReconnect) { note in
            print("reconnecting in", note.userInfo.delay, "s, Last-Event-ID", note.userInfo.lastEventID)
            reconnections.withLock { $0.append(note.userInfo.lastEventID) }
        }

        for try await event in session.events(for: Request(url: url)) {
            sink.handle("\(event.id) \(event.event): \(event.data)")
        }

        #expect(sink.collectedLines.map { $0.prefix(7) } == ["1 tick:", "2 tick:", "3 tick:"])
        #expect(reconnections.withLock { $0 } == ["2", "3"])
        token.cancel()
        try await server.shutdown()
    }
}
