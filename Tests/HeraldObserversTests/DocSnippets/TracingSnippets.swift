import Herald
import HeraldObservers
import HeraldTesting
import Testing
import Tracing

/// The tracing snippets of `ObservingInProduction.md`, run: a session whose tasks get their client span as
/// they are made.
@Suite("Tracing snippets")
struct TracingSnippets {
    @Test("with traceClientSpans(of:), a plain task sends its own client span: the server's span is its child")
    func clientSpansOfEveryTask() async throws {
        let traced = try await TraceContextTests.Traced()
        let (tracer, tracing, session) = (traced.tracer, traced.tracing, traced.session)
        // ObservingInProduction.md: every task of the session gets its client span as it is made.
        tracing.traceClientSpans(of: session)
        let url = traced.server.url("/text")
        let parent = try await withTracer(tracer) {
            try await tracer.withSpan("checkout") { span in
                _ = try await session.data(for: Request(url: url))
                return span.spanContext
            }
        }
        _ = try await traced.recorder.waitForCompletions(1)

        let client = try traced.clientSpan()
        #expect(client.traceID == parent.traceID)
        #expect(client.parentSpanID == parent.spanID)
        #expect(client.attributes.get("http.response.status_code") == .int64(200))
        let received = try traced.receivedContexts(path: "/text")
        #expect(received.map(\.traceID.description) == [parent.traceID])
        #expect(received.map(\.spanID.description) == [client.spanID])
        try await traced.shutdown()
    }
}
