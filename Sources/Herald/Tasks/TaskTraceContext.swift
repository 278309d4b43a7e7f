import HeraldEngine
import Foundation
import Instrumentation

/// The trace context a task belongs to, and the instrument that turns it into header fields.
///
/// Both are taken when the task is created, on the creator's thread, because that is where the task-local
/// `ServiceContext.current` and a `withTracer` scope's instrument exist; transfers start later on other
/// threads (a redirect's on the hook queue), where neither does.
///
/// A class: an optional struct holding an existential and a `ServiceContext` was copied through the
/// runtime's generic witnesses, absent or not, each time a task read it.
final class TaskTraceContext: Sendable {
    let serviceContext: ServiceContext
    let instrument: any Instrument

    /// The context of a task made for `request` now: the request's own, else the task-local one, as
    /// `hook` (the session's ``SessionManager/taskTraceContext``) turns it, when the session has one; `nil`
    /// when there is none, and then Herald adds no header and touches no instrument.
    ///
    /// A factory, not a failable initializer: a class's failable initializer allocates the instance before
    /// it can fail, and most tasks have no context.
    static func make(
        for request: Request, through hook: (@Sendable (Request, ServiceContext?) -> ServiceContext?)? = nil
    ) -> TaskTraceContext? {
        var context = request.serviceContext ?? ServiceContext.current
        if let hook { context = hook(request, context) }
        guard let context else { return nil }
        return TaskTraceContext(serviceContext: context, instrument: InstrumentationSystem.instrument)
    }

    private init(serviceContext: ServiceContext, instrument: any Instrument) {
        self.serviceContext = serviceContext
        self.instrument = instrument
    }

    /// Sets the fields the instrument injects for the context (with a W3C propagator, `traceparent` and
    /// `tracestate`) on `headers`, replacing fields of the same names. Called for every transfer, never
    /// with a lock held: the instrument is the application's code.
    func inject(into headers: inout HeaderFields) {
        instrument.inject(serviceContext, into: &headers, using: HeaderFieldsInjector())
    }
}

/// Writes an instrument's values into request header fields.
struct HeaderFieldsInjector: Injector {
    /// Sets `key: value`, replacing an existing field of that name. A name that is not an HTTP token or a
    /// value with a control character other than tab is dropped: an instrument must not be able to split the
    /// request.
    func inject(_ value: String, forKey key: String, into headers: inout HeaderFields) {
        guard Request.isValidField(name: key, value: value) else { return }
        headers.replaceOrAdd(name: key, value: value)
    }
}
