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
import W3CTraceContext

/// The caller's trace context travels with the task: to the server in `traceparent` on every hop, to
/// `TracingObserver`'s span as its parent, and to `LoggingObserver`'s lines through the metadata provider.
///
/// Each test binds its own ``W3CTestTracer`` with `withTracer`, the task-local override of
/// `InstrumentationSystem.instrument`, so tests running in parallel in one process never share an
/// instrument and none bootstraps the process-wide one.
@Suite("Trace context")
struct TraceContextTests {
    /// A session on its own hub, its tracing observer (and any other `observers`), and a recorder
    /// registered after them: a completion the recorder has seen, they have all handled.
    struct Traced {
        let server: TestServer
        let session: SessionManager
        let tracer = W3CTestTracer()
        let tracing: TracingObserver<W3CTestTracer>
        let recorder: RecordingObserver
        let tokens: [ObservationToken]

        init(observers: [any SessionObserver] = []) async throws {
            server = try await TestServer.start()
            let center = NotificationHub()
            session = SessionManager(notificationCenter: center)
            session.responseSerializer = DataResponseSerializer()
            tracing = TracingObserver(tracer: tracer)
            tokens = ([tracing] + observers).map { $0.observe(center) }
            recorder = RecordingObserver(center: center)
        }

        /// Runs `request` to completion inside a span named `checkout`; returns that span's ids.
        func fetchInsideSpan(_ request: Request) async throws -> InMemorySpanContext {
            let tracer = tracer
            let session = session
            let parent = try await withTracer(tracer) {
                try await tracer.withSpan("checkout") { span in
                    _ = try await session.data(for: request)
                    return span.spanContext
                }
            }
            _ = try await recorder.waitForCompletions(1)
            return parent
        }

        /// The `traceparent` (and `tracestate`) the server received with each request to `path`, parsed.
        func receivedContexts(path: String) throws -> [TraceContext] {
            try server.requests(forPath: path).map { request in
                let traceParent = try #require(request.headerValue("traceparent"), "no traceparent on \(path)")
                return try TraceContext(
                    traceParentHeaderValue: traceParent, traceStateHeaderValue: request.headerValue("tracestate"))
            }
        }

        /// The client span `TracingObserver` made for the task.
        func clientSpan() throws -> FinishedInMemorySpan {
            let spans = tracer.spans.finishedSpans.filter { $0.kind == .client }
            try #require(spans.count == 1, "client spans: \(spans.map(\.operationName))")
            return spans[0]
        }

        func shutdown() async throws {
            tokens.forEach { $0.cancel() }
            session.invalidate(cancelingTasks: true)
            try await server.shutdown()
        }
    }

    @Test("a request made inside a span sends that span in traceparent, and the client span is its child")
    func requestInsideSpan() async throws {
        let traced = try await Traced()
        let parent = try await traced.fetchInsideSpan(Request(url: traced.server.url("/text")))

        let received = try traced.receivedContexts(path: "/text")
        #expect(received.count == 1)
        #expect(received.first?.traceID.description == parent.traceID)
        #expect(received.first?.spanID.description == parent.spanID)
        #expect(received.first?.flags == .sampled)

        let client = try traced.clientSpan()
        #expect(client.operationName == "GET")
        #expect(client.traceID == parent.traceID)
        #expect(client.parentSpanID == parent.spanID)
        #expect(client.spanID != parent.spanID)
        try await traced.shutdown()
    }

    @Test("a request whose span startSpan(for:) started sends that span: the server's span is the client span's child")
    func clientSpanPropagated() async throws {
        let traced = try await Traced()
        let (tracer, tracing, session) = (traced.tracer, traced.tracing, traced.session)
        let url = traced.server.url("/text")
        let parent = try await withTracer(tracer) {
            try await tracer.withSpan("checkout") { span in
                _ = try await session.data(for: tracing.startSpan(for: Request(url: url)))
                return span.spanContext
            }
        }
        _ = try await traced.recorder.waitForCompletions(1)

        let client = try traced.clientSpan()
        #expect(client.traceID == parent.traceID)
        #expect(client.parentSpanID == parent.spanID)
        #expect(client.attributes.get("http.response.status_code") == .int64(200))
        #expect(client.attributes.get("herald.task.id") != nil)
        let received = try traced.receivedContexts(path: "/text")
        #expect(received.map(\.traceID.description) == [parent.traceID])
        #expect(received.map(\.spanID.description) == [client.spanID])
        try await traced.shutdown()
    }

    @Test("with traceClientSpans(of:), a request from startSpan(for:) keeps its one span")
    func startedSpanKeptUnderTheHook() async throws {
        let traced = try await Traced()
        let (tracer, tracing, session) = (traced.tracer, traced.tracing, traced.session)
        tracing.traceClientSpans(of: session)
        let url = traced.server.url("/text")
        try await withTracer(tracer) {
            try await tracer.withSpan("checkout") { _ in
                _ = try await session.data(for: tracing.startSpan(for: Request(url: url)))
            }
        }
        _ = try await traced.recorder.waitForCompletions(1)

        let client = try traced.clientSpan()
        let received = try traced.receivedContexts(path: "/text")
        #expect(received.map(\.spanID.description) == [client.spanID])
        // The hook started no second span for it: nothing is left open but the finished client span.
        #expect(tracer.spans.activeSpans.filter { $0.kind == .client }.isEmpty)
        try await traced.shutdown()
    }

    @Test("every redirect hop carries the trace context, even when the redirection hook replaces the headers")
    func redirectHops() async throws {
        let traced = try await Traced()
        traced.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            var bare = proposed
            bare.headers = ["X-Hop": "rewritten"]
            return bare
        }
        let parent = try await traced.fetchInsideSpan(Request(url: traced.server.url("/redirect/2")))

        let paths = ["/redirect/2", "/redirect/1", "/redirect/0"]
        for path in paths {
            let received = try traced.receivedContexts(path: path)
            #expect(received.count == 1, "\(path)")
            #expect(received.first?.traceID.description == parent.traceID, "\(path)")
            #expect(received.first?.spanID.description == parent.spanID, "\(path)")
        }
        #expect(traced.server.requests(forPath: "/redirect/0").first?.headerValue("X-Hop") == "rewritten")
        #expect(try traced.clientSpan().parentSpanID == parent.spanID)
        try await traced.shutdown()
    }

    @Test("an authentication re-send carries the trace context too")
    func authenticationHop() async throws {
        let traced = try await Traced()
        traced.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            .useCredential(Credential(user: "ada", password: "lovelace"))
        }
        let path = "/auth/basic"
        let parent = try await traced.fetchInsideSpan(
            Request(url: traced.server.url("\(path)?user=ada&password=lovelace")))

        let requests = traced.server.requests(forPath: path)
        #expect(requests.map(\.responseStatus) == [401, 200])
        let received = try traced.receivedContexts(path: path)
        #expect(received.map(\.traceID.description) == [parent.traceID, parent.traceID])
        #expect(received.map(\.spanID.description) == [parent.spanID, parent.spanID])
        try await traced.shutdown()
    }

    @Test("a context passed with the request wins over the task-local one, tracestate included")
    func explicitContext() async throws {
        let traced = try await Traced()
        let tracer = traced.tracer
        let job = tracer.startSpan("job", context: .topLevel)
        var context = job.context
        context[W3CTestTracer.TraceStateKey.self] = "herald=test"
        let request = Request(url: traced.server.url("/json"), serviceContext: context)
        // Made inside another span: the request's own context is the one that counts.
        let other = try await traced.fetchInsideSpan(request)
        job.end()

        let received = try #require(try traced.receivedContexts(path: "/json").first)
        #expect(received.traceID.description == job.spanContext.traceID)
        #expect(received.spanID.description == job.spanContext.spanID)
        #expect(received.traceID.description != other.traceID)
        #expect(received.state[.simple("herald")] == "test")
        #expect(try traced.clientSpan().parentSpanID == job.spanContext.spanID)
        try await traced.shutdown()
    }

    @Test("a task made outside any span sends no trace header and gets a top-level span")
    func noContext() async throws {
        let traced = try await Traced()
        let session = traced.session
        let url = traced.server.url("/text")
        _ = try await withTracer(traced.tracer) { try await session.data(for: Request(url: url)) }
        _ = try await traced.recorder.waitForCompletions(1)

        let received = try #require(traced.server.requests(forPath: "/text").first)
        #expect(received.headerValue("traceparent") == nil)
        #expect(try traced.clientSpan().parentSpanID == nil)
        try await traced.shutdown()
    }

    @Test("LoggingObserver's lines carry the trace and span ids through the logger's metadata provider")
    func logLinesCarryIDs() async throws {
        var handler = InMemoryLogHandler()
        handler.metadataProvider = Logger.MetadataProvider {
            guard let span = ServiceContext.current?.inMemorySpanContext else { return [:] }
            return ["trace_id": .string(span.traceID), "span_id": .string(span.spanID)]
        }
        var logger = Logger(label: "traced") { _ in handler }
        logger.logLevel = .trace
        let observer = LoggingObserver(logger: logger)
        let traced = try await Traced(observers: [observer])
        let parent = try await traced.fetchInsideSpan(Request(url: traced.server.url("/text")))
        await observer.flush()

        let messages = handler.entries.map(\.message.description)
        #expect(messages == ["task resumed", "task request headers", "task completed", "task completion detail"])
        for entry in handler.entries {
            #expect(entry.metadata["trace_id"] == .string(parent.traceID), "\(entry.message)")
            #expect(entry.metadata["span_id"] == .string(parent.spanID), "\(entry.message)")
        }
        try await traced.shutdown()
    }

    /// Like swift-otel's OTLP log handler: reads the span from `ServiceContext.current` when it logs.
    struct ContextReadingHandler: LogHandler {
        let logged = Locked<[(message: String, span: InMemorySpanContext?)]>([])
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
            file: String, function: String, line: UInt
        ) {
            let span = ServiceContext.current?.inMemorySpanContext
            logged.withLock { $0.append((message.description, span)) }
        }
    }

    @Test("a log handler reading ServiceContext.current when it logs finds the task's context")
    func logHandlerSeesContext() async throws {
        let handler = ContextReadingHandler()
        var logger = Logger(label: "traced") { _ in handler }
        logger.logLevel = .debug
        let observer = LoggingObserver(logger: logger)
        let traced = try await Traced(observers: [observer])
        let parent = try await traced.fetchInsideSpan(Request(url: traced.server.url("/text")))
        await observer.flush()

        let logged = handler.logged.withLock { $0 }
        #expect(logged.map(\.message) == ["task resumed", "task completed"])
        for entry in logged {
            #expect(entry.span?.traceID == parent.traceID, "\(entry.message)")
            #expect(entry.span?.spanID == parent.spanID, "\(entry.message)")
        }
        try await traced.shutdown()
    }

    /// An instrument that tries to split the request through the header fields it injects.
    struct HeaderSplittingTracer: Tracer {
        let spans = InMemoryTracer()

        func startSpan<Instant: TracerInstant>(
            _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
            at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
        ) -> InMemorySpan {
            spans.startSpan(
                operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID,
                line: line)
        }

        func forceFlush() {}

        func inject<Carrier, Inject: Injector>(
            _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
        ) where Inject.Carrier == Carrier {
            injector.inject("00-1-2-01\r\nX-Smuggled: 1", forKey: "traceparent", into: &carrier)
            injector.inject("v", forKey: "bad name", into: &carrier)
            injector.inject("ok", forKey: "baggage", into: &carrier)
        }

        func extract<Carrier, Extract: Extractor>(
            _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
        ) where Extract.Carrier == Carrier {}
    }

    @Test("an injected field that is not a valid header is dropped; the valid ones are sent")
    func invalidInjectedFieldsDropped() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        session.responseSerializer = DataResponseSerializer()
        let request = Request(url: server.url("/text"), serviceContext: .topLevel)
        let (_, response) = try await withTracer(HeaderSplittingTracer()) { try await session.data(for: request) }

        #expect(response.statusCode == 200)
        let received = try #require(server.requests(forPath: "/text").first)
        #expect(received.headerValue("baggage") == "ok")
        #expect(received.headerValue("traceparent") == nil)
        #expect(received.headerValue("X-Smuggled") == nil)
        #expect(received.headers.allSatisfy { $0.name != "bad name" })
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
