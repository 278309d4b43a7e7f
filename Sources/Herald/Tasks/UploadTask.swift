import Foundation

/// A task that sends a body from memory, a file or a stream, and collects the response in memory: AF's
/// upload task.
///
/// Create one with ``SessionManager/uploadTask(with:from:progress:completionHandler:)``,
/// ``SessionManager/uploadTask(with:fromFile:progress:completionHandler:)`` or
/// ``SessionManager/uploadTask(withStreamedRequest:bodyProvider:progress:completionHandler:)``. The
/// response is serialized by the session's ``SessionManager/responseSerializer``, as for a data task.
/// Upload progress counts the body bytes handed to the connection, exactly; after a rewind (a 307, an
/// authentication round-trip) it counts again from the rewound position.
open class UploadTask: DataTask, @unchecked Sendable {
    // Safety: adds one immutable Sendable member to DataTask.

    /// Where the body comes from.
    enum Body: Sendable {
        case data(Data)
        case file(URL)
        case stream(BodyStream)
        /// A body of a known length made by `open`, fresh for every (re)send.
        case sized(length: Int64, open: @Sendable () throws(HeraldError) -> BodyStream)
    }

    let body: Body

    init(
        session: SessionManager, identifier: Int, request: Request, body: Body,
        completionHandler: TaskCompletionHandler?
    ) {
        self.body = body
        super.init(session: session, identifier: identifier, request: request, completionHandler: completionHandler)
    }

    override func makeTransferRequest(for request: Request) -> TransferRequest {
        let transferBody: TransferBody
        switch body {
        case .data(let data):
            transferBody = .data(data)
        case .file(let url):
            transferBody = .file(url)
        case .stream(let stream):
            let session = session
            transferBody = .stream(stream) { [weak self] in
                guard let self else { return nil }
                return session.taskNeedNewBodyStream?(self)
            }
        case .sized(let length, let open):
            transferBody = .sized(length: length, open: open)
        }
        return session.transferRequest(for: request, body: transferBody)
    }
}
