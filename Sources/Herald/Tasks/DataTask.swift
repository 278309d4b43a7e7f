import Foundation
import HeraldEngine

/// A task whose response body is collected in memory: AF's data task.
///
/// Create one with ``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``.
/// The body is kept once — the buffer that received it is handed to the serializer and to the
/// completion, never copied. To have the session hand out a subclass, see ``TaskClasses``.
open class DataTask: SessionTask, @unchecked Sendable {
    // Safety: adds one immutable, Sendable property to SessionTask.

    /// What the task does with its response body: serialize it, return it raw, or stream it to a consumer.
    let bodyHandling: ResponseBodyHandling

    /// Creates the task a session prepared. The session calls it on the class ``SessionManager/taskClasses``
    /// names; a subclass that declares initializers of its own implements it and calls `super.init(creation)`.
    /// - Parameter creation: What the session prepared; pass it on unchanged.
    public required init(_ creation: TaskCreation) {
        self.bodyHandling = creation.bodyHandling
        super.init(creation: creation)
    }

    /// Whether ``ResponseDisposition/becomeDownload`` is honoured: not for tasks whose completion returns
    /// the body in memory or streams it (the `async` forms).
    var canBecomeDownload: Bool { bodyHandling.canBecomeDownload }

    override var usesResponseCache: Bool { bodyHandling.allowsResponseCache }

    /// The request body's source for one attempt: the request's own body; an upload task's is its own.
    func transferBody(for request: Request) -> TransferBody? {
        request.body.map { .data($0) }
    }

    override func makeTransferRequest(for request: Request) -> TransferRequest {
        var transfer = session.transferRequest(for: request, body: transferBody(for: request))
        if let buffer = bodyHandling.streamBuffer { transfer.sink = .stream(buffer) }
        return transfer
    }

    /// Once a streamed body's consumer has the head, the task completes with that response whatever
    /// follows: no redirect hop, authentication round-trip or retry may put a second response's bytes
    /// behind the first's.
    override func proceed(after outcome: TaskOutcome) {
        guard let buffer = bodyHandling.streamBuffer, buffer.hasHandedOverHead else {
            return super.proceed(after: outcome)
        }
        takeCookies(from: outcome)
        completeTransfer(outcome)
    }

    /// A streamed body's consumer gets the error next: what waits for it is not handed out after a cancel.
    override func didStop(reporting error: HeraldError) { bodyHandling.streamBuffer?.stop(with: error) }

    override func completionResult(for outcome: TaskOutcome, serializer: any ResponseSerializer) -> CompletionResult {
        bodyHandling.completionResult(for: outcome, serializer: serializer, url: originalRequest.url)
    }

    override var receivesDataTaskHooks: Bool { true }

    package override func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        guard let hook = session.dataTaskDidReceiveData else { return }
        let data = Data(bytes)
        session.runOnCompletionQueue { hook(self, data) }
    }

    /// The data-task hooks were kept from the response of a redirect or a challenge while it arrived, as it was
    /// to lead to another transfer. When it is the task's result after all (the redirection hook returned `nil`,
    /// no credential answered the challenge) they see it as any final response: ``SessionManager/dataTaskDidReceiveResponse``
    /// here on the hook queue, then the body, whole, through ``SessionManager/dataTaskDidReceiveData`` on the
    /// completion queue before the completion handler. `.becomeDownload` can't be honoured for a body that has
    /// already arrived: the task fails with ``HeraldError/Code/invalidRequest``.
    override func completeWithHopResponse(_ outcome: TaskOutcome, from current: TransferRequest) {
        // Only a response the hooks were kept from: a 401 the transfer didn't expect to answer was shown already.
        guard let response = outcome.response,
            current.leadsToNextHop(status: response.statusCode, headers: response.headers.engineFields)
        else { return super.completeWithHopResponse(outcome, from: current) }
        if current.asksForResponseDisposition, let hook = session.dataTaskDidReceiveResponse {
            let disposition = hook(self, response)
            // Completed while the hook decided (a cancel, the resource timeout): the body goes to no hook after
            // the completion handler.
            guard !hasCompleted else { return }
            switch disposition {
            case .allow:
                break
            case .cancel:
                return cancel()
            case .becomeDownload:
                return finishHop(
                    outcome,
                    error: HeraldError(
                        .invalidRequest,
                        "dataTaskDidReceiveResponse answered .becomeDownload for a \(response.statusCode) response whose "
                            + "body had already arrived (a redirect not followed, or a challenge no credential "
                            + "answered): it can't become a download.", url: originalRequest.url))
            }
        }
        if current.forwardsBodyChunks, !outcome.body.isEmpty, let hook = session.dataTaskDidReceiveData {
            let body = outcome.body
            session.runOnCompletionQueue { hook(self, body) }
        }
        super.completeWithHopResponse(outcome, from: current)
    }

    override func needsResponseDisposition(_ response: HTTPResponse, transfer: Transfer) {
        guard let hook = session.dataTaskDidReceiveResponse else {
            return super.needsResponseDisposition(response, transfer: transfer)
        }
        // A transfer whose result the engine holds for the answer (a body-less response) is out of libcurl and
        // its timeout: the task's deadline stops it instead.
        armResourceDeadline()
        // The transfer waits for this answer: on the hook queue a slow hook holds back this task alone, where
        // on the completion queue it would wait behind other tasks' handlers, and they behind it.
        hookQueue.async {
            // Completed while this waited behind the task's other hook-queue work (a body stream's read, cancelled
            // meanwhile): the answer would be ignored, and the hook is not asked about a finished task.
            guard !self.hasCompleted else { return }
            self.apply(hook(self, response), to: transfer)
        }
    }
}
