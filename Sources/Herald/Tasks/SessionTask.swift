import Foundation

/// The completion handler of a task: the response, the serializer's output and the error, AF-style.
///
/// Runs exactly once, on the session's ``SessionManager/completionQueue`` (inside its
/// ``SessionManager/completionGroup`` when one is set), before `taskDidComplete` is posted. On success
/// `responseObject` holds the serializer's output and `error` is `nil`; on failure `error` says why
/// (transport, cancellation, or the serializer's refusal) and `response` is whatever arrived.
public typealias TaskCompletionHandler = @Sendable (
    _ response: HTTPResponse?, _ responseObject: (any Sendable)?, _ error: HeraldError?
) -> Void

/// A unit of work in a ``SessionManager``: one request, its transfer and its lifecycle.
///
/// New tasks are suspended; call ``resume()`` to start. ``resume()``, ``suspend()`` and ``cancel()`` are
/// safe from any thread, any number of times, and each real state change happens exactly once and is
/// announced exactly once on the session's notification center (`taskDidResume`, `taskDidSuspend`, and
/// finally `taskDidComplete`). The class is `open` so it can be subclassed; an override of
/// ``resume()`` or ``suspend()`` that calls `super` keeps the notifications.
open class SessionTask: @unchecked Sendable, TransferDelegate {
    // Safety: every mutable member lives in `core`, a lock; the others are immutable and Sendable.

    struct Core {
        var machine = TaskStateMachine()
        var transfer: Transfer?
        var response: HTTPResponse?
        var error: HeraldError?
        var metrics: TransferMetrics?
        var taskDescription: String?
        var completionHandler: TaskCompletionHandler?
        var uploadProgressHandler: (@Sendable (TransferProgress) -> Void)?
        var downloadProgressHandler: (@Sendable (TransferProgress) -> Void)?
    }

    /// The task's identifier, unique within its session.
    public let taskIdentifier: Int
    /// The request as it was given to the factory.
    public let originalRequest: Request
    /// Progress of the request body; controls the task (see ``TransferProgress``).
    public let uploadProgress = TransferProgress()
    /// Progress of the response body; controls the task (see ``TransferProgress``).
    public let downloadProgress = TransferProgress()

    let session: SessionManager
    let core: Locked<Core>

    init(session: SessionManager, identifier: Int, request: Request, completionHandler: TaskCompletionHandler?) {
        self.session = session
        self.taskIdentifier = identifier
        self.originalRequest = request
        self.core = Locked(Core(completionHandler: completionHandler))
        uploadProgress.bind(to: self)
        downloadProgress.bind(to: self)
    }

    /// The task's current state.
    public var state: TaskState { core.withLock { $0.machine.state } }

    /// The response head, once it has arrived.
    public var response: HTTPResponse? { core.withLock { $0.response } }

    /// The error the task completed with, once completed with one.
    public var error: HeraldError? { core.withLock { $0.error } }

    /// curl's metrics, once the task has completed after reaching the network.
    public var metrics: TransferMetrics? { core.withLock { $0.metrics } }

    /// A description for your own use, such as a label for logs. Herald never reads it — in particular
    /// it plays no part in deciding which session owns the task.
    public var taskDescription: String? {
        get { core.withLock { $0.taskDescription } }
        set { core.withLock { $0.taskDescription = newValue } }
    }

    /// Starts or continues the task. Does nothing unless the task is suspended.
    ///
    /// The first resume hands the request to the engine; later ones unpause the transfer where it
    /// stopped, without transferring again what already arrived. Posts `taskDidResume` when the state
    /// really changed.
    open func resume() {
        core.withLock { core in
            switch core.machine.resume() {
            case .none:
                return
            case .start:
                let transfer = Transfer(request: makeTransferRequest(), delegate: self)
                core.transfer = transfer
                session.hook.taskDidTransition(self, to: .running)
                session.enqueue { multi in multi.add(transfer) }
            case .unpause:
                session.hook.taskDidTransition(self, to: .running)
                if let transfer = core.transfer {
                    session.enqueue { _ in transfer.unpause() }
                }
            }
        }
    }

    /// Pauses a running task; the connection stays open and the transfer continues from the same byte
    /// on ``resume()``. Does nothing unless the task is running. Posts `taskDidSuspend` when the state
    /// really changed.
    ///
    /// A paused connection may be closed by the server after its idle timeout; the task then fails
    /// with ``HeraldError/Code/networkConnectionLost`` after resuming. The session's resource timeout
    /// keeps running while suspended.
    open func suspend() {
        core.withLock { core in
            guard core.machine.suspend() else { return }
            session.hook.taskDidTransition(self, to: .suspended)
            if let transfer = core.transfer {
                session.enqueue { _ in transfer.pause() }
            }
        }
    }

    /// Cancels the task. It completes with ``HeraldError/Code/cancelled``: the completion handler runs
    /// and `taskDidComplete` is posted, exactly once. Does nothing once the task is canceling or
    /// completed.
    open func cancel() {
        let action = core.withLock { core -> TaskStateMachine.CancelAction in
            let action = core.machine.cancel()
            if action == .stopTransfer, let transfer = core.transfer {
                session.enqueue { multi in multi.remove(transfer, error: Self.cancellation(for: transfer.request.url)) }
            }
            return action
        }
        if action == .completeWithoutTransfer {
            transferDidFinish(TransferOutcome(response: nil, body: Data(), error: nil, metrics: nil))
        }
    }

    static func cancellation(for url: URL) -> HeraldError {
        HeraldError(.cancelled, "The task was cancelled.", url: url)
    }

    // MARK: - TransferDelegate (engine loop thread)

    func transferDidReceiveResponse(_ response: HTTPResponse) {
        core.withLock { $0.response = response }
    }

    func transferDidReceiveBytes(total received: Int64, expected: Int64?) {
        let handler = core.withLock { $0.downloadProgressHandler }
        downloadProgress.update(
            completed: received, total: expected, queue: session.completionQueue, handler: handler)
    }

    func transferDidSendBytes(total sent: Int64, expected: Int64?) {
        let handler = core.withLock { $0.uploadProgressHandler }
        uploadProgress.update(completed: sent, total: expected, queue: session.completionQueue, handler: handler)
    }

    func transferDidFinish(_ outcome: TransferOutcome) {
        let wasCancelled = core.withLock { core -> Bool? in
            guard let wasCancelled = core.machine.complete() else { return nil }
            core.transfer = nil
            core.metrics = outcome.metrics
            if let response = outcome.response { core.response = response }
            return wasCancelled
        }
        guard let wasCancelled else { return }
        var outcome = outcome
        if wasCancelled, outcome.error?.code != .cancelled {
            outcome.error = Self.cancellation(for: originalRequest.url)
        }
        session.complete(self, with: outcome)
    }

    // MARK: - task kinds (overridden by UploadTask and DownloadTask)

    /// What the engine must do for this task: the request, its body source and its body sink. Called
    /// once, with the task's lock held, when the task first resumes; must not take that lock.
    func makeTransferRequest() -> TransferRequest {
        session.transferRequest(for: originalRequest, body: originalRequest.body.map { .data($0) })
    }

    /// Turns the transfer's outcome into what the completion handler and `taskDidComplete` carry. Runs
    /// once per task, on a global queue (never the loop thread), before the completion handler.
    func completionResult(for outcome: TransferOutcome, serializer: any ResponseSerializer) -> CompletionResult {
        let (object, error) = CompletionResult.serialize(outcome, with: serializer, url: originalRequest.url)
        let responseData: Data? = outcome.response == nil && outcome.body.isEmpty ? nil : outcome.body
        return CompletionResult(
            handlerObject: object, serializedResponse: object, responseData: responseData, assetPath: nil,
            error: error)
    }

    // MARK: - completion (called by the session)

    /// Records the final error and runs the completion handler. Completion queue.
    func runCompletionHandler(response: HTTPResponse?, object: (any Sendable)?, error: HeraldError?) {
        let (handler, uploadHandler, downloadHandler) = core.withLock { core in
            core.error = error
            let handlers = (core.completionHandler, core.uploadProgressHandler, core.downloadProgressHandler)
            core.completionHandler = nil
            core.uploadProgressHandler = nil
            core.downloadProgressHandler = nil
            return handlers
        }
        uploadProgress.finish(deliveringFinalUpdateTo: uploadHandler)
        downloadProgress.finish(deliveringFinalUpdateTo: downloadHandler)
        handler?(response, object, error)
    }
}

/// A task whose response body is collected in memory: AF's data task.
///
/// Create one with ``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``.
/// The body is kept once — the buffer that received it is handed to the serializer and to the
/// completion, never copied.
open class DataTask: SessionTask, @unchecked Sendable {
    // Safety: adds no stored state to SessionTask.
}
