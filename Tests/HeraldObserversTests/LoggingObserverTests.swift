import Foundation
import Herald
import HeraldObservers
import InMemoryLogging
import Logging
import Testing

@Suite("Logging observer")
struct LoggingObserverTests {
    let tasks = OfflineTasks()

    func makeLogger(level: Logger.Level) -> (Logger, InMemoryLogHandler) {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "herald.test") { _ in handler }
        logger.logLevel = level
        return (logger, handler)
    }

    @Test("start and completion are logged at debug with method, redacted URL, status, duration, bytes")
    func lifecycleAtDebug() async throws {
        let (logger, handler) = makeLogger(level: .debug)
        let observer = LoggingObserver(logger: logger)
        let task = try tasks.task("https://alice:s3cret@example.com/items?id=1", method: "POST")
        observer.taskDidResume(Payloads.resume(task: 4, session: 2, request: task.summary))
        observer.taskDidComplete(
            Payloads.complete(
                task: 4, session: 2, request: task.summary,
                response: Payloads.response(201, url: task.originalRequest.url),
                metrics: Payloads.metrics(total: 0.25, sent: 10, received: 2048)))
        await observer.flush()
        let entries = handler.entries
        #expect(entries.map(\.message.description) == ["task resumed", "task completed"])
        #expect(entries.allSatisfy { $0.level == .debug })
        let start = entries[0].metadata
        #expect(start["http.request.method"] == "POST")
        #expect(start["url.full"] == "https://REDACTED:REDACTED@example.com/items?id=1")
        #expect(start["herald.task.id"]?.description == "4")
        #expect(start["herald.session.id"]?.description == "2")
        let end = entries[1].metadata
        #expect(end["http.response.status_code"]?.description == "201")
        #expect(end["herald.duration"] == "0.250")
        #expect(end["herald.bytes.sent"]?.description == "10")
        #expect(end["herald.bytes.received"]?.description == "2048")
        #expect(end["error.type"] == nil)
        #expect(!entries.description.contains("s3cret"))
    }

    @Test("a failure logs the error code")
    func failure() async throws {
        let (logger, handler) = makeLogger(level: .debug)
        let task = try tasks.task("http://example.com/slow")
        let observer = LoggingObserver(logger: logger)
        observer.taskDidComplete(
            Payloads.complete(task: 1, request: task.summary, error: HeraldError(.timedOut, "Timed out.")))
        await observer.flush()
        #expect(handler.entries.first?.metadata["error.type"] == "timed_out")
        #expect(handler.entries.first?.metadata["herald.error.code"] == "timed_out")
    }

    @Test("control characters a server sent are escaped: no forged or hidden line in a text log")
    func controlCharactersEscaped() async throws {
        let (logger, handler) = makeLogger(level: .trace)
        let task = try tasks.task("http://example.com/feed")
        let observer = LoggingObserver(logger: logger)
        // Before, a bare CR and an escape sequence went to the backend as they came: printed, the CR returns to the
        // line's start and overwrites it with the forged text.
        let forged = "text/html\r2026-12-07 info: payment ok\u{1B}[K"
        let response = Payloads.response(
            200, url: task.originalRequest.url,
            headers: ["Content-Type": forged, "X-Note": "a\nb\tc\u{7F}\u{85} caf\u{E9}"])
        let error = HeraldError(.unacceptableContentType, "The server answered \"\(forged)\".")
        observer.taskDidComplete(Payloads.complete(task: 1, request: task.summary, response: response, error: error))
        await observer.flush()
        let completed = try #require(handler.entries.first { $0.message == "task completed" })
        #expect(
            completed.metadata["error.message"]
                == #"The server answered "text/html\r2026-12-07 info: payment ok\u{1B}[K"."#)
        let detail = try #require(handler.entries.first { $0.message == "task completion detail" })
        #expect(
            detail.metadata["http.response.header.content-type"] == #"text/html\r2026-12-07 info: payment ok\u{1B}[K"#)
        // Printable text, non-ASCII included, is left as it is.
        #expect(detail.metadata["http.response.header.x-note"] == "a\\nb\\tc\\u{7F}\\u{85} caf\u{E9}")
        let everything = handler.entries.description
        #expect(!everything.unicodeScalars.contains { $0 == "\r" || $0 == "\u{1B}" })
    }

    @Test("error.type is the metrics' and the spans': the failed status first, none for a body that didn't parse")
    func errorTypeAsTheMetricsHaveIt() async throws {
        let (logger, handler) = makeLogger(level: .debug)
        let task = try tasks.task("http://example.com/items")
        let observer = LoggingObserver(logger: logger)
        let url = try #require(URL(string: "http://example.com/items"))
        func response(_ status: Int) -> HTTPResponse { HTTPResponse(url: url, statusCode: status, headers: [:]) }
        observer.taskDidComplete(
            Payloads.complete(
                task: 1, request: task.summary, response: response(404),
                error: HeraldError(.unacceptableStatusCode, "404.")))
        observer.taskDidComplete(Payloads.complete(task: 2, request: task.summary, response: response(503)))
        observer.taskDidComplete(
            Payloads.complete(
                task: 3, request: task.summary, response: response(200),
                error: HeraldError(.serializationFailed, "Not JSON.")))
        await observer.flush()
        let metadata = handler.entries.map(\.metadata)
        #expect(metadata.count == 3)
        // Before, the log said `unacceptable_status_code`, nothing, and `serialization_failed`.
        #expect(metadata.map { $0["error.type"]?.description } == ["404", "503", nil])
        #expect(
            metadata.map { $0["herald.error.code"]?.description } == [
                "unacceptable_status_code", nil, "serialization_failed",
            ])
    }

    @Test("headers are logged at trace with Authorization, Cookie, Set-Cookie, Proxy-Authorization redacted")
    func headerRedaction() async throws {
        let (logger, handler) = makeLogger(level: .trace)
        let task = try tasks.task(
            "http://example.com/",
            headers: [
                "Authorization": "Bearer abc", "Cookie": "session=xyz", "Proxy-Authorization": "Basic zzz",
                "Accept": "application/json", "X-Forwarded-For": "192.0.2.1", "x-forwarded-for": "192.0.2.2",
            ])
        let observer = LoggingObserver(logger: logger)
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        let response = Payloads.response(
            200, url: task.originalRequest.url, headers: ["Set-Cookie": "a=1", "Content-Type": "text/plain"])
        observer.taskDidComplete(Payloads.complete(task: 1, request: task.summary, response: response))
        await observer.flush()
        let trace = handler.entries.filter { $0.level == .trace }
        #expect(trace.map(\.message.description) == ["task request headers", "task completion detail"])
        let request = trace[0].metadata
        #expect(request["http.request.header.authorization"] == "REDACTED")
        #expect(request["http.request.header.cookie"] == "REDACTED")
        #expect(request["http.request.header.proxy-authorization"] == "REDACTED")
        #expect(request["http.request.header.accept"] == "application/json")
        // A repeated field's values, joined: before, only the last was logged.
        #expect(request["http.request.header.x-forwarded-for"] == "192.0.2.1, 192.0.2.2")
        #expect(trace[1].metadata["http.response.header.set-cookie"] == "REDACTED")
        #expect(trace[1].metadata["http.response.header.content-type"] == "text/plain")
        let everything = handler.entries.description
        for secret in ["abc", "xyz", "zzz", "a=1"] { #expect(!everything.contains(secret)) }
    }

    @Test("more headers and query items can be redacted")
    func customRedaction() async throws {
        let (logger, handler) = makeLogger(level: .trace)
        var redaction = LogRedaction.default
        redaction.redactHeader("X-Api-Key")
        redaction.redactQueryItem("token")
        let task = try tasks.task("http://example.com/a?token=t0p&page=2", headers: ["x-api-key": "k3y"])
        let observer = LoggingObserver(logger: logger, redaction: redaction)
        observer.taskDidResume(Payloads.resume(task: 1, request: task.summary))
        await observer.flush()
        let entries = handler.entries
        #expect(entries[0].metadata["url.full"] == "http://example.com/a?token=REDACTED&page=2")
        #expect(entries[1].metadata["http.request.header.x-api-key"] == "REDACTED")
        #expect(!entries.description.contains("t0p") && !entries.description.contains("k3y"))
    }

    @Test("at info level nothing is logged")
    func quietAtInfo() async throws {
        let (logger, handler) = makeLogger(level: .info)
        let observer = LoggingObserver(logger: logger)
        observer.taskDidResume(Payloads.resume(task: 1))
        observer.taskDidComplete(Payloads.complete(task: 1))
        observer.sessionDidInvalidate(Payloads.invalidate())
        await observer.flush()
        #expect(handler.entries.isEmpty)
    }

    @Test("a failed download move is logged at warning with the kept file and the destination")
    func moveFailureAtWarning() async throws {
        let (logger, handler) = makeLogger(level: .warning)
        let task = try tasks.task("http://ada:secret@127.0.0.1:8080/file.bin")
        let observer = LoggingObserver(logger: logger)
        observer.downloadDidFailToMoveFile(Payloads.moveFailure(task: 3, session: 2, request: task.summary))
        await observer.flush()
        let entry = try #require(handler.entries.first)
        #expect(handler.entries.count == 1)
        #expect(entry.level == .warning)
        #expect(entry.message.description == "download move failed")
        #expect(entry.metadata["herald.session.id"]?.description == "2")
        #expect(entry.metadata["herald.task.id"]?.description == "3")
        #expect(entry.metadata["http.request.method"] == "GET")
        #expect(entry.metadata["url.full"] == "http://REDACTED:REDACTED@127.0.0.1:8080/file.bin")
        #expect(entry.metadata["error.type"] == "download_move_failed")
        #expect(entry.metadata["herald.download.file"] == "/tmp/herald/kept.download")
        #expect(entry.metadata["herald.download.destination"] == "/missing/dir/out.bin")
        #expect(!handler.entries.description.contains("secret"))
    }

    @Test("above warning, a failed move is not logged")
    func moveFailureQuietAtError() async {
        let (logger, handler) = makeLogger(level: .error)
        let observer = LoggingObserver(logger: logger)
        observer.downloadDidFailToMoveFile(Payloads.moveFailure(task: 1))
        await observer.flush()
        #expect(handler.entries.isEmpty)
    }
}
