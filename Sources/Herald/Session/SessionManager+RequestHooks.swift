import Foundation
import Instrumentation

// The hooks that shape what is sent: a redirect's next request, a streamed body sent again, the trace context
// a task carries.
extension SessionManager {
    /// AF's `taskWillPerformHTTPRedirection`: decides each redirect before Herald follows it.
    ///
    /// Called once per hop with the task, the 3xx response and the request Herald proposes — already
    /// rewritten by the rules: `POST` → `GET` without body on 301/302, everything but `HEAD` → `GET` on 303,
    /// method and body kept on 307/308 (a `GET`'s body too, which 301, 302 and 303 drop), `Location` resolved
    /// against the current URL, and `Authorization`, `Cookie`, `Proxy-Authorization` and a `Host` of yours
    /// removed when the scheme, host or port changes. Its body is the one the hop would send when that is in
    /// memory (an adapter's, an upload's data); a file's or a stream's is sent but not shown, and a hook that
    /// changes the method without giving a body drops it. Return it unchanged to follow, a modified request to send
    /// that instead (it is validated like a new request; its URL, method, headers, body and `timeoutInterval` are
    /// what the hop sends with, its `serviceContext` is not used: the task's trace goes on), or `nil` to complete
    /// the task with the 3xx response itself (its body is the task's body). A request the hook sends to another
    /// origin than the redirecting one loses those fields as it was shown them, whatever else the hook changed; a
    /// value the hook set or changed for one of them goes along.
    ///
    /// Runs on the task's hook queue — never the engine's loop thread, never ``completionQueue`` — one hop
    /// at a time per task, before that hop's request is sent. The hop limit, a disallowed scheme and an
    /// `https` → `http` downgrade are checked before it is asked; a loop (a request already sent for this
    /// task) after. If the task is cancelled while the hook runs, it completes with
    /// ``HeraldError/Code/cancelled`` and what the hook returns is ignored. Not called when
    /// ``SessionConfiguration/followsRedirects`` is `false`. Default `nil`: follow the proposed request.
    public var taskWillPerformHTTPRedirection: RedirectionHook? {
        get { readHooks { $0.taskWillPerformHTTPRedirection } }
        set { updateHooks { $0.taskWillPerformHTTPRedirection = newValue } }
    }

    /// AF's `taskNeedNewBodyStream`: provides a fresh body stream when a streamed upload must be sent again
    /// (a redirect that keeps the body: a 307 or 308, or a 301 or 302 of a method other than `POST`; an
    /// authentication round-trip; a retry, or an attempt made again after a wait for connectivity; a reused
    /// connection that closed early).
    ///
    /// Never called on the engine's loop thread. Before a redirect hop, an authentication round-trip or
    /// another attempt (which Herald runs as a new transfer) it is called on the task's hook queue, after
    /// ``taskWillPerformHTTPRedirection`` or the challenge hook. When the same transfer sends the body again
    /// (libcurl's own resend on a reused connection that closed, Digest's own round-trip, Herald's resend on
    /// a fresh connection after a reset) it is called on the same queue, where the body's stream is read
    /// (see ``BodyStream``), while the transfer waits, paused; it may
    /// take its time without holding back other transfers. Either way: return a new ``BodyStream``
    /// positioned at the start of the body, or `nil` when none can be made — the task then fails with
    /// ``HeraldError/Code/bodyStream``. Data and file bodies rewind themselves and never call it. Default
    /// `nil`.
    public var taskNeedNewBodyStream: (@Sendable (SessionTask) -> BodyStream?)? {
        get { readHooks { $0.taskNeedNewBodyStream } }
        set { updateHooks { $0.taskNeedNewBodyStream = newValue } }
    }

    /// Chooses the trace context a new task belongs to: called once per task, on the thread that creates
    /// it, with the task's request and the context it would otherwise belong to — the request's
    /// ``Request/serviceContext``, else the creating code's task-local `ServiceContext.current`, `nil` when
    /// there is neither. The context returned (`nil`: none) is the task's ``SessionTask/serviceContext``: Herald
    /// injects it into the header fields of every transfer the task runs (`traceparent`, with a W3C
    /// propagator) and every notification's ``RequestSummary`` carries it.
    ///
    /// A tracing backend starts the request's client span here, so that the `traceparent` a server receives
    /// names that span and the server's span becomes its child — HeraldObservers' `TracingObserver` does it
    /// with `traceClientSpans(of:)`. It runs synchronously inside the task factory, before the task exists:
    /// keep it short, and don't call the session from it. Default `nil`: the context as it is.
    public var taskTraceContext: (@Sendable (_ request: Request, _ context: ServiceContext?) -> ServiceContext?)? {
        get { readHooks { $0.taskTraceContext } }
        set { updateHooks { $0.taskTraceContext = newValue } }
    }
}
