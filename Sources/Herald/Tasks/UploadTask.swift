import Foundation
import HeraldEngine

/// A task that sends a body from memory, a file or a stream, and collects the response in memory: AF's
/// upload task.
///
/// Create one with ``SessionManager/uploadTask(with:from:progress:completionHandler:)``,
/// ``SessionManager/uploadTask(with:fromFile:progress:completionHandler:)`` or
/// ``SessionManager/uploadTask(withStreamedRequest:bodyProvider:progress:completionHandler:)``. The
/// response is serialized by the session's ``SessionManager/responseSerializer``, as for a data task.
/// Upload progress counts the body bytes handed to the connection, exactly; after a rewind (a 307, an
/// authentication round-trip) it counts again from the rewound position. To have the session hand out a
/// subclass, see ``TaskClasses``.
open class UploadTask: DataTask, @unchecked Sendable {
    // Safety: adds one immutable Sendable member to DataTask.

    /// Where the body comes from.
    enum Body: Sendable {
        case data(Data)
        case file(URL)
        /// A stream, of a length the caller declared (its request's `Content-Length`) or of none (chunked).
        case stream(BodyStream, length: Int64?)
        /// A body of a known length made by `open`, fresh for every (re)send.
        case sized(length: Int64, open: @Sendable () throws(HeraldError) -> BodyStream)
    }

    let body: Body

    /// Creates the task a session prepared. The session calls it on the class ``SessionManager/taskClasses``
    /// names; a subclass that declares initializers of its own implements it and calls `super.init(creation)`.
    /// - Parameter creation: What the session prepared; pass it on unchanged.
    public required init(_ creation: TaskCreation) {
        if case .upload(let body) = creation.kind {
            self.body = body
        } else {
            // Only an upload factory makes an upload task; anything else sends the request's own body, as
            // a data task would.
            self.body = .data(creation.request.body ?? Data())
        }
        super.init(creation)
    }

    /// Upload tasks are never served from or stored in the response cache.
    override var usesResponseCache: Bool { false }

    override var sendsUploadBody: Bool { true }

    override var sendsStreamedBody: Bool { body.isStream }

    override func transferBody(for request: Request) -> TransferBody? {
        body.transferBody(for: self)
    }
}

extension UploadTask.Body {
    /// Whether the body is a stream, which only ``SessionManager/taskNeedNewBodyStream`` can give again.
    var isStream: Bool {
        if case .stream = self { return true }
        return false
    }

    /// The body's source for one attempt of `task`: the upload task, or the download it became, whose retries
    /// send the same body. A stream is renewed through ``SessionManager/taskNeedNewBodyStream``, asked about
    /// the task the caller holds (the upload task, also for the download it became).
    func transferBody(for task: SessionTask) -> TransferBody {
        let hookQueue = task.hookQueue
        switch self {
        case .data(let data):
            return .data(data)
        case .file(let url):
            return .file(url)
        case .stream(let stream, let length):
            let session = task.session
            // The stream is user code: it is read on this task's hook queue, as its hooks run.
            return .stream(
                stream.pulled,
                renew: { [weak task] in
                    guard let task else { return nil }
                    return session.taskNeedNewBodyStream?(task.lifecycleSubject)?.pulled
                }, readOn: hookQueue, length: length)
        case .sized(let length, let open):
            return .sized(
                length: length,
                open: { () throws(TransferError) -> PulledBody in
                    do throws(HeraldError) { return try open().pulledKeepingErrors } catch {
                        throw TransferError(error)
                    }
                }, readOn: hookQueue)
        }
    }
}
