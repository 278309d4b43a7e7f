import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import InMemoryLogging
import InMemoryTracing
import Logging
import Testing
import Tracing

/// A pre-signed URL's signature never leaves in clear: not in spans, logs, the event log, metrics, nor in the
/// messages of the errors they carry.
@Suite("Signature redaction")
struct SignatureRedactionTests {
    static let secrets = ["AMZSECRET0123456789", "SIGSECRET4567", "GOOGSECRET89", "AKIAKEYID77"]
    static let query =
        "?X-Amz-Signature=AMZSECRET0123456789&sig=SIGSECRET4567&X-Goog-Signature=GOOGSECRET89"
        + "&AWSAccessKeyId=AKIAKEYID77&keep=visible"

    @Test("X-Amz-Signature, sig and the others are REDACTED in spans, logs, metrics and error messages")
    func signaturesRedactedEverywhere() async throws {
        let server = try await TestServer.start()
        // A port nothing listens on, so the request fails to connect.
        let closed = try RefusingPort()
        defer { closed.close() }
        let closedURL = closed.url("/json" + Self.query)

        let center = NotificationHub()
        let session = SessionManager(notificationCenter: center)
        session.responseSerializer = DataResponseSerializer()
        let logHandler = InMemoryLogHandler()
        var logger = Logger(label: "redaction") { _ in logHandler }
        logger.logLevel = .trace
        let metrics = InstrumentRecordingFactory()
        let tracer = InMemoryTracer()
        let lines = SharedText()
        let logging = LoggingObserver(logger: logger)
        let eventLog = JSONLinesEventLog(stream: lines)
        let tracing = TracingObserver(tracer: tracer)
        var configuration = MetricsObserver.Configuration()
        configuration.describesInstruments = true
        let metricsObserver = MetricsObserver(factory: metrics, configuration: configuration)
        let tokens = [
            logging.observe(center), eventLog.observe(center), tracing.observe(center), metricsObserver.observe(center),
        ]
        let recorder = RecordingObserver(center: center)

        let urls = [server.url("/json" + Self.query), server.url("/status/404" + Self.query), closedURL]
        for url in urls { try session.dataTask(with: Request(url: url)).resume() }
        try await recorder.waitForCompletions(urls.count)

        // An error whose message quotes the URL, as a message may: posted as Herald posts a completion.
        let task = try session.dataTask(with: Request(url: server.url("/json" + Self.query)))
        let quoting = HeraldError(
            .badServerResponse, "Unexpected answer from \(urls[0].absoluteString).", url: urls[0])
        for observer in [logging, eventLog, tracing, metricsObserver] as [any SessionObserver] {
            observer.taskDidResume(
                TypedNotification(
                    name: .taskDidResume, object: nil,
                    userInfo: TaskLifecycleEvent(
                        taskIdentifier: 99, sessionIdentifier: 99, date: Date(), request: task.summary)))
            observer.taskDidComplete(
                TypedNotification(
                    name: .taskDidComplete, object: nil,
                    userInfo: TaskCompletion(
                        taskIdentifier: 99, sessionIdentifier: 99, date: Date(), request: task.summary,
                        responseSerializer: DataResponseSerializer(), responseData: nil, assetPath: nil,
                        serializedResponse: nil, error: quoting, response: nil, finalURL: nil, metrics: nil)))
        }
        await logging.flush()
        await eventLog.flush()

        // Spans: url.full, the status message and the recorded exception.
        let spans = tracer.finishedSpans
        #expect(spans.count == 4)
        var exported: [String] = []
        for span in spans {
            let full = try #require(span.attributes.get("url.full"))
            #expect("\(full)".contains("X-Amz-Signature=REDACTED"))
            #expect("\(full)".contains("sig=REDACTED"))
            #expect("\(full)".contains("keep=visible"))
            span.attributes.forEach { name, value in exported.append("\(name)=\(value)") }
            exported.append(span.status?.message ?? "")
            exported += span.errors.map { String(describing: $0.error) }
            exported += span.errors.map { "\($0.error)" }
        }
        #expect(spans.contains { !$0.errors.isEmpty }, "no exception recorded: the test would prove nothing")
        // Logs: messages and metadata, the error message included.
        for entry in logHandler.entries {
            exported.append(entry.message.description)
            exported.append(entry.metadata.description)
        }
        #expect(logHandler.entries.contains { $0.metadata["error.message"] != nil })
        // The event log's lines.
        exported.append(lines.text)
        #expect(lines.text.contains("errorMessage"))
        // Every metric dimension.
        for made in metrics.all { exported += made.dimensions.map { "\($0.0)=\($0.1)" } }
        #expect(!metrics.all.isEmpty)

        for text in exported {
            for secret in Self.secrets {
                #expect(!text.contains(secret), "\(secret) leaked in: \(text)")
            }
        }
        // The quoting error reached the exports redacted, not dropped.
        #expect(exported.contains { $0.contains("Unexpected answer from") && $0.contains("sig=REDACTED") })

        await session.invalidateAndWait(cancelingTasks: true)
        tokens.forEach { $0.cancel() }
        _ = recorder
        try await server.shutdown()
    }

    @Test("URLs in Location, Content-Location, Link and Refresh are redacted as URLs; other fields are left alone")
    func urlValuedHeaders() throws {
        let signed = "https://u:pw@bucket.example/o?X-Amz-Signature=S1&X-Amz-Security-Token=T1&keep=1"
        let headers: HTTPHeaders = [
            "Location": signed, "Content-Location": "/o?sig=S2&keep=2",
            "Link": "<\(signed)>; rel=\"next\", </a>; rel=x",
            "Refresh": "5; url='/r?Signature=S3'", "X-Other": "https://h.example/?sig=visible",
        ]
        let redacted = LogRedaction.default.redacting(headers)
        let text = redacted.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
        for secret in ["pw", "S1", "T1", "S2", "S3"] {
            #expect(!text.contains("=\(secret)") && !text.contains(":\(secret)@"), "\(secret) in:\n\(text)")
        }
        let value = { (name: String) in redacted.first { $0.name == name }?.value }
        #expect(
            value("Location")
                == "https://REDACTED:REDACTED@bucket.example/o?X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED&keep=1"
        )
        #expect(value("Content-Location") == "/o?sig=REDACTED&keep=2")
        #expect(value("Link")?.hasSuffix("; rel=\"next\", </a>; rel=x") == true)
        #expect(value("Refresh") == "5; url=/r?Signature=REDACTED")
        #expect(value("X-Other") == "https://h.example/?sig=visible")
        // Refresh as HTML reads it: without `url=`, and with a `url=` inside the URL's own query.
        for (refresh, expected) in [
            ("0; https://cdn.example/f?X-Amz-Signature=S4", "0; https://cdn.example/f?X-Amz-Signature=REDACTED"),
            (
                "0; https://cdn.example/f?X-Amz-Signature=S5&return_url=https://app/",
                "0; https://cdn.example/f?X-Amz-Signature=REDACTED&return_url=https://app/"
            ),
            ("1, URL = \"/r?sig=S6\"", "1, URL = /r?sig=REDACTED"),
            ("not a refresh ?sig=S7", "REDACTED"),
        ] {
            let one = LogRedaction.default.redacting(["Refresh": refresh]).first?.value
            #expect(one == expected, "\(refresh)")
        }
    }

    @Test("the redacted query items are configurable, and compared in any case")
    func configurable() throws {
        var redaction = LogRedaction.default
        redaction.redactQueryItem("token")
        let url = try #require(URL(string: "https://h.example/p?TOKEN=t0p&SIG=abc&x-amz-signature=def&keep=1"))
        let expected = "https://h.example/p?TOKEN=REDACTED&SIG=REDACTED&x-amz-signature=REDACTED&keep=1"
        #expect(redaction.redacting(url) == expected)
        let none = LogRedaction(headerNames: [])
        #expect(none.redacting(url) == url.absoluteString)
        #expect(redaction.redacting("failed: \(url)", secretsOf: [url]).contains("t0p") == false)
    }
}
