import Foundation

/// A task whose response body is collected in memory: AF's data task.
///
/// Create one with ``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``.
/// The body is kept once — the buffer that received it is handed to the serializer and to the
/// completion, never copied. To have the session hand out a subclass, see ``TaskClasses``.
open class DataTask: SessionTask, @unchecked Sendable {
    // Safety: adds no stored state to SessionTask.

    /// Creates the task a session prepared. The session calls it on the class ``SessionManager/taskClasses``
    /// names; a subclass that declares initializers of its own implements it and calls `super.init(creation)`.
    /// - Parameter creation: What the session prepared; pass it on unchanged.
    public required init(_ creation: TaskCreation) {
        super.init(
            session: creation.session, identifier: creation.identifier, request: creation.request,
            completionHandler: creation.completionHandler)
    }

    /// Whether ``ResponseDisposition/becomeDownload`` is honoured: not for tasks whose completion returns
    /// the body in memory (the `async` forms).
    var canBecomeDownload: Bool { true }

    override var usesResponseCache: Bool { true }

    override var receivesDataTaskHooks: Bool { true }

    override func transferDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        guard let hook = session.dataTaskDidReceiveData else { return }
        let data = Data(bytes)
        session.runOnCompletionQueue { hook(self, data) }
    }

    override func transferNeedsResponseDisposition(_ response: HTTPResponse, transfer: Transfer) {
        guard let hook = session.dataTaskDidReceiveResponse else {
            return super.transferNeedsResponseDisposition(response, transfer: transfer)
        }
        // The transfer waits for this answer: on the hook queue a slow hook holds back this task alone, where
        // on the completion queue it would wait behind other tasks' handlers, and they behind it.
        hookQueue.async {
            self.apply(hook(self, response), to: transfer)
        }
    }
}
