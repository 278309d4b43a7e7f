import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The snippets of the DocC article "Streaming responses", run against the loopback server.
@Suite("StreamingResponses.md snippets")
struct StreamingSnippets {
    @Test("a body read line by line")
    func lines() async throws {
        let server = try await TestServer.start()
        let session = SessionManager()
        // doc-line: let url = URL(string: "https://logs.example.com/tail")!
        let url = server.url("/events/2?size=3")

        let (response, body) = try await session.bytes(for: Request(url: url))
        guard response.statusCode == 200 else { throw HeraldError(.unacceptableStatusCode, "\(response.statusCode)") }
        for try await line in body.lines {
            print(line)
        }

        let sent = try #require(server.requests(forPath: "/events/2").first)
        #expect(sent.responseStatus == 200)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    @Test("a body read chunk by chunk with a larger buffer")
    func chunks() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        // doc-line: let archive = URL(string: "https://files.example.com/archive.tar")!
        let archive = server.url("/bytes/\(3 << 20)")

        let policy = StreamBufferPolicy(highWatermark: 4 << 20, lowWatermark: 1 << 20)
        let (_, chunks) = try await session.bytes(for: Request(url: archive), bufferPolicy: policy)
        var received = 0
        for try await chunk in chunks {
            received += chunk.count  // or hand the chunk to a parser, a hash, a file
        }

        #expect(received == 3 << 20)
        try await server.shutdown()
    }

    @Test("the chunk closure, for code that isn't async")
    func closure() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        let session = SessionManager(notificationCenter: NotificationHub())
        let recorder = RecordingObserver(center: session.notificationCenter)
        defer { session.invalidate(cancelingTasks: true) }
        // doc-line: let url = URL(string: "https://files.example.com/archive.tar")!
        let url = server.url("/bytes/100000")
        // doc-line: let output = URL(fileURLWithPath: "/var/tmp/archive.tar")
        let output = scratch.url.appendingPathComponent("archive.tar")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let file = try FileHandle(forWritingTo: output)
        // The closure's last event, after every chunk was written and the file closed: what the test awaits.
        let outcome = OneShot<String>()
        @Sendable func report(_ line: String) {
            print(line)
            outcome.send(line)
        }

        let task = try session.dataStreamTask(with: Request(url: url)) { event in
            switch event {
            case .response(let response): print("status", response.statusCode)
            case .chunk(let data): try? file.write(contentsOf: data)
            case .complete(let error):
                try? file.close()
                // doc-line: print(error.map { "failed: \($0.code)" } ?? "saved")
                report(error.map { "failed: \($0.code)" } ?? "saved")
            }
        }
        task.resume()

        // The events reach the closure after the task completes: await the last one, then read the file.
        #expect(try await outcome.value(timeout: .seconds(20)) == "saved")
        try await recorder.waitForCompletions(1)
        #expect(task.error == nil)
        #expect(try PatternFile.matches(output, count: 100_000))
        scratch.remove()
        try await server.shutdown()
    }

    @Test("server-sent events, and an observer of their reconnections")
    func events() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        let reconnections = Locked<[String]>([])
        let counting = session.notificationCenter.addObserver(for: .eventSourceWillReconnect) { note in
            reconnections.withLock { $0.append(note.userInfo.lastEventID) }
        }
        // doc-line: let url = URL(string: "https://api.example.com/v1/updates")!
        let url = server.url("/events/3?dropEvery=2&retry=10")

        let token = session.notificationCenter.addObserver(for: .eventSourceWillReconnect) { note in
            print("reconnecting in", note.userInfo.delay, "s, Last-Event-ID", note.userInfo.lastEventID)
        }

        for try await event in session.events(for: Request(url: url)) {
            print("\(event.id) \(event.event): \(event.data)")
        }
        token.cancel()

        #expect(reconnections.withLock { $0 } == ["2", "3"])
        // The last connection asked for what followed event 3 and was told there is nothing more.
        #expect(server.requests(forPath: "/events/3").last?.headerValue("Last-Event-ID") == "3")
        counting.cancel()
        try await server.shutdown()
    }

    @Test("server-sent events with an open for each connection")
    func eventsWithOpen() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        defer { session.invalidate(cancelingTasks: true) }
        // The snippet's print, recorded too.
        let log = Locked<[String]>([])
        @Sendable func print(_ items: Any...) {
            Swift.print(items.map { "\($0)" }.joined(separator: " "))
            log.withLock { $0.append(items.map { "\($0)" }.joined(separator: " ")) }
        }
        // doc-line: let url = URL(string: "https://api.example.com/v1/updates")!
        let url = server.url("/events/3?dropEvery=2&retry=10&size=4")

        for try await element in session.events(for: Request(url: url)).withOpen {
            switch element {
            case .open(let response): print("connected:", response.statusCode)
            case .event(let event): print("\(event.id) \(event.event): \(event.data)")
            }
        }

        // Two connections served events, each announced before its first; the third, a 204, opened nothing.
        #expect(
            log.withLock { $0 } == ["connected: 200", "1 tick: 1 xx", "2 tick: 2 xx", "connected: 200", "3 tick: 3 xx"])
        try await server.shutdown()
    }
}
