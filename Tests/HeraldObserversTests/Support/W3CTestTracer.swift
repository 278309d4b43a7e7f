import InMemoryTracing
import Instrumentation
import Tracing
import W3CTraceContext

/// swift-distributed-tracing's `InMemoryTracer` with W3C Trace Context ids and propagation: what a
/// production tracer with a W3C propagator (swift-otel's, say) puts on the wire, with spans kept in memory.
///
/// Ids are made by W3CTraceContext (`TraceID.random()`, `SpanID.random()`: 32 and 16 lowercase hex digits),
/// and `inject` writes `traceparent: 00-<trace id>-<span id>-01` for the context's span, plus `tracestate`
/// when the context carries a ``TraceStateKey`` value. Tests bind it per test with `withTracer(_:_:)`, so no
/// test bootstraps the process-wide `InstrumentationSystem` (which can be done once per process).
struct W3CTestTracer: Tracer {
    typealias Span = InMemorySpan

    let spans = InMemoryTracer(
        idGenerator: .init(
            nextTraceID: { TraceID.random().description }, nextSpanID: { SpanID.random().description }))

    /// The `tracestate` a context carries, for the tracer to inject with its `traceparent`.
    enum TraceStateKey: ServiceContextKey {
        typealias Value = String
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        spans.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID,
            line: line)
    }

    func forceFlush() { spans.forceFlush() }

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
        if let state = context[TraceStateKey.self] {
            injector.inject(state, forKey: "tracestate", into: &carrier)
        }
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier),
            let parsed = try? TraceContext(traceParentHeaderValue: header)
        else { return }
        context.inMemorySpanContext = InMemorySpanContext(
            traceID: parsed.traceID.description, spanID: parsed.spanID.description, parentSpanID: nil)
    }
}
