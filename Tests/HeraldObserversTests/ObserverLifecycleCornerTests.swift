import CoreMetrics
import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing

/// The ready observers together (metrics, tracing, the activity indicator, logging) over real sessions and a
/// loopback server, through the lifecycle's corners: every count back to zero, every span ended once.
@Suite("The ready observers across the lifecycle's corners")
struct ObserverLifecycleCornerTests {
    final class Rig: @unchecked Sendable {
        let server: TestServer
        let center = NotificationHub()
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let logHandler = InMemoryLogHandler()
        let indicator = NetworkActivityIndicator(activationDelay: 0, completionDelay: 0)
        let logging: LoggingObserver
        var tokens: [ObservationToken] = []
        let recorder: RecordingObserver

        init(server: TestServer) {
            self.server = server
            var logger = Logger(label: "corners") { [logHandler] _ in logHandler }
            logger.logLevel = .trace
            logging = LoggingObserver(logger: logger)
            tokens = [
                MetricsObserver(factory: metrics, configuration: .init()).observe(center),
                TracingObserver(tracer: tracer).observe(center),
                indicator.observe(center),
                logging.observe(center),
            ]
            recorder = RecordingObserver(center: center)
        }

        func session(_ configuration: SessionConfiguration = .default) -> SessionManager {
            SessionManager(configuration: configuration, notificationCenter: center)
        }

        var activeRequests: Double {
            metrics.meters.filter { $0.label == MetricsObserver.Name.activeRequests }.compactMap(\.lastValue).reduce(
                0, +)
        }
    }

    static func settled(_ rig: Rig, completions: Int) async throws {
        try await rig.recorder.waitForCompletions(completions, timeout: .seconds(30))
        await rig.center.drain()
    }

    static func expectBalanced(_ rig: Rig, spans: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(rig.activeRequests == 0, "active requests \(rig.activeRequests)", sourceLocation: sourceLocation)
        #expect(rig.indicator.runningTaskCount == 0, sourceLocation: sourceLocation)
        #expect(
            rig.tracer.activeSpans.isEmpty, "open spans: \(rig.tracer.activeSpans.map(\.operationName))",
            sourceLocation: sourceLocation)
        #expect(
            rig.tracer.finishedSpans.count == spans, "finished \(rig.tracer.finishedSpans.count)",
            sourceLocation: sourceLocation)
    }

    @Test("cancel before resume; suspended for ever then invalidated: counts back to zero, spans end once")
    func cancelAndSuspendedForever() async throws {
        let server = try await TestServer.start()
        let rig = Rig(server: server)
        let session = rig.session()
        let never = try session.dataTask(with: Request(url: server.url("/json")))
        never.cancel()
        let suspended = try session.dataTask(with: Request(url: server.url("/bytes/1048576?delayMs=50&chunkSize=1024")))
        suspended.resume()
        suspended.suspend()
        try await rig.recorder.waitUntil { $0.contains { $0.kind == .suspend } }
        await session.invalidateAndWait(cancelingTasks: true)
        try await Self.settled(rig, completions: 2)
        Self.expectBalanced(rig, spans: 1)
        let span = try #require(rig.tracer.finishedSpans.first)
        #expect(span.status?.code == .error)
        #expect(span.attributes.get("error.type") == .string("cancelled"))
        try await server.shutdown()
    }

    @Test("retries with and without delay, redirects, a cache hit, a data task become download: all balanced")
    func retriesRedirectsCacheDownload() async throws {
        let server = try await TestServer.start()
        let rig = Rig(server: server)
        var configuration = SessionConfiguration()
        configuration.responseCache = InMemoryResponseCache()
        let session = rig.session(configuration)
        session.responseSerializer = DataResponseSerializer()
        session.interceptor = RetryPolicy(backoffScale: 0.05, maximumBackoff: 0.1)
        let becomes = Locked(Set<Int>())
        session.dataTaskDidReceiveResponse = { task, _ in
            becomes.withLock { $0.contains(task.taskIdentifier) } ? .becomeDownload : .allow
        }
        let cached = Request(url: server.url("/headers?Cache-Control=max-age%3D600"))
        _ = try await session.data(for: cached)
        let requests = [
            Request(url: server.url("/flaky?key=a&fail=2")),
            Request(url: server.url("/flaky?key=b&fail=1&retry-after=0")),
            Request(url: server.url("/redirect/3")),
            // A redirect, then a 503 that is retried: the redirect again, then the answer. Four requests.
            Request(url: server.url("/redirect-to?url=%2Fflaky%3Fkey%3Dc%26fail%3D1")),
            cached,
            Request(url: server.url("/bytes/65536")),
        ]
        var tasks: [SessionTask] = []
        for request in requests {
            let task = try session.dataTask(with: request)
            tasks.append(task)
        }
        becomes.withLock { _ = $0.insert(tasks.last!.taskIdentifier) }
        for task in tasks { task.resume() }
        try await Self.settled(rig, completions: 7)
        #expect(tasks.allSatisfy { $0.error == nil }, "\(tasks.map { $0.error?.message ?? "ok" })")
        Self.expectBalanced(rig, spans: 7)
        for span in rig.tracer.finishedSpans {
            #expect(span.status == nil, "\(span.attributes)")
            #expect(span.attributes.get("http.response.status_code") == .int64(200))
            // network.protocol.version, except a pure cache hit
            if span.attributes.get("herald.response.source") == .string("network") {
                #expect(span.attributes.get("network.protocol.version") == .string("1.1"))
            }
        }
        let redirected = rig.tracer.finishedSpans.first {
            "\($0.attributes.get("url.full").map { "\($0)" } ?? "")".contains("/redirect/3")
        }
        #expect(redirected?.attributes.get("http.request.resend_count") == .int64(3))
        let flaky = rig.tracer.finishedSpans.first {
            "\($0.attributes.get("url.full").map { "\($0)" } ?? "")".contains("key=a")
        }
        #expect(flaky?.attributes.get("http.request.resend_count") == .int64(2))
        // Every request after the first, the first attempt's redirect too (before, the last attempt's only: 2).
        let retriedRedirect = rig.tracer.finishedSpans.first {
            "\($0.attributes.get("url.full").map { "\($0)" } ?? "")".contains("redirect-to")
        }
        #expect(retriedRedirect?.attributes.get("http.request.resend_count") == .int64(3))
        await session.invalidateAndWait()
        await rig.center.drain()
        Self.expectBalanced(rig, spans: 7)
        try await server.shutdown()
    }

    @Test("a task that answered a challenge is timed from its resume to its completion, not by its last transfer")
    func challengeHopTimedWhole() async throws {
        let server = try await TestServer.start()
        let rig = Rig(server: server)
        let session = rig.session()
        session.sessionDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "alice", password: "s3cret"))
        }
        let resumedAt = Locked<Date?>(nil)
        let resumes = rig.center.addObserver(for: .taskDidResume) { note in
            resumedAt.withLock { $0 = $0 ?? note.userInfo.date }
        }
        defer { resumes.cancel() }
        let task = try session.dataTask(with: Request(url: server.url("/auth/basic?user=alice&password=s3cret")))
        task.resume()
        try await Self.settled(rig, completions: 1)
        #expect(task.response?.statusCode == 200)
        #expect(task.hopMetrics.count == 2)
        let durations = rig.metrics.timers.filter { $0.label == MetricsObserver.Name.requestDuration }
            .flatMap(\.values)
        #expect(durations.count == 1)
        let completion = try #require(rig.recorder.completions.first)
        let start = try #require(resumedAt.withLock { $0 })
        let whole = Int64(completion.date.timeIntervalSince(start) * 1_000_000_000)
        let lastTransfer = Int64((completion.metrics?.total ?? 0) * 1_000_000_000)
        let duration = durations.first ?? 0
        // The whole task, the 401's transfer included; before, the authenticated transfer's alone.
        #expect(abs(duration - whole) < 1_000, "\(duration) ns, the task \(whole) ns")
        #expect(duration > lastTransfer, "\(duration) ns, the last transfer \(lastTransfer) ns")
        Self.expectBalanced(rig, spans: 1)
        await session.invalidateAndWait()
        try await server.shutdown()
    }

    @Test("a slow completion handler and a throwing serializer: balanced")
    func slowHandlerAndThrowingSerializer() async throws {
        struct Refuses: ResponseSerializer {
            func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> Int {
                throw HeraldError(.serializationFailed, "no")
            }
        }
        let server = try await TestServer.start()
        let rig = Rig(server: server)
        let session = rig.session()
        session.responseSerializer = Refuses()
        let slow = try session.dataTask(with: Request(url: server.url("/json"))) { _, _, _ in
            // The slow user code under test (a completion handler that blocks), not a wait for an event.
            Thread.sleep(forTimeInterval: 0.3)
        }
        let other = try session.dataTask(with: Request(url: server.url("/json")))
        slow.resume()
        other.resume()
        try await Self.settled(rig, completions: 2)
        Self.expectBalanced(rig, spans: 2)
        // The requests succeeded and the serializer refused the answers: the spans say so and keep their status.
        #expect(
            rig.tracer.finishedSpans.allSatisfy {
                $0.status?.code != .error
                    && $0.attributes.get("herald.response.refused") == .string("serialization_failed")
            })
        await session.invalidateAndWait()
        try await server.shutdown()
    }

    @Test("url.full and logs carry no credentials or signature, however the query item name is spelled")
    func redaction() async throws {
        let server = try await TestServer.start()
        let rig = Rig(server: server)
        let session = rig.session()
        var components = URLComponents(url: server.url("/json"), resolvingAgainstBaseURL: false)!
        components.user = "bob"
        components.password = "pw-secret-1"
        components.percentEncodedQuery = "X-Amz-Signature=sig-secret-2&%73ig=sig-secret-3&Signature=sig-secret-4"
        let task = try session.dataTask(with: Request(url: components.url!))
        task.resume()
        try await Self.settled(rig, completions: 1)
        await rig.logging.flush()
        let span = try #require(rig.tracer.finishedSpans.first)
        let url = span.attributes.get("url.full").map { "\($0)" } ?? ""
        let logs = rig.logHandler.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["pw-secret-1", "sig-secret-2", "sig-secret-3", "sig-secret-4"] {
            #expect(!url.contains(secret), "url.full: \(url)")
            #expect(!logs.contains(secret), "log has \(secret)")
        }
        await session.invalidateAndWait()
        try await server.shutdown()
    }
}
