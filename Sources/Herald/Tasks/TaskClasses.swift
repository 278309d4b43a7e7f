import Foundation

/// The task classes a ``SessionManager`` instantiates: how a session hands out your own subclass of
/// ``DataTask``, ``UploadTask`` or ``DownloadTask`` — Herald's form of AFNetworking's swizzled
/// `resume`/`suspend`.
///
/// Set ``SessionManager/taskClasses`` before creating tasks; every factory reads it when it creates a task, so
/// every task a session makes is an instance of the class it names:
///
/// - ``dataTask`` for ``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``,
///   `HTTPSessionManager`'s verbs, ``SessionManager/responseObject(for:)``, ``SessionManager/data(for:)``,
///   ``SessionManager/value(for:serializer:)``, the streamed bodies (``SessionManager/bytes(for:bufferPolicy:)``,
///   ``SessionManager/dataStreamTask(with:bufferPolicy:eventHandler:)``) and each connection of ``SessionManager/events(for:options:)``;
/// - ``uploadTask`` for every `uploadTask(…)` factory, the multipart ones and the `upload(for:…)` forms;
/// - ``downloadTask`` for both `downloadTask(…)` factories, the `download(for:…)` forms, and the download
///   task a data task becomes (``ResponseDisposition/becomeDownload``).
///
/// What differs between those factories (whether the body is serialized, returned raw or streamed to a
/// consumer) is part of the task the session prepares, not of its class: your subclass runs for all of them.
///
/// The session calls the class's `required init(_:)` with a ``TaskCreation``. A subclass that declares no
/// initializer of its own inherits it; one that does must also implement `required init(_ creation:)` and
/// pass `creation` to `super.init(_:)`.
///
/// Every state change of a task goes through its ``SessionTask/resume()`` and ``SessionTask/suspend()``:
/// calls from your code, from its progress objects (``TransferProgress/resume()``,
/// ``TransferProgress/pause()``) and from the session (the `async` forms and `HTTPSessionManager`'s verbs
/// resume the tasks they create) all run your overrides. An override that calls `super` keeps
/// `taskDidResume`/`taskDidSuspend` exactly as without it — posted once per real state change; one that
/// does not call `super` leaves the task's state unchanged and posts nothing.
public struct TaskClasses: Sendable {
    /// The class of data tasks; default ``DataTask``. Must not be an ``UploadTask`` subclass: a factory
    /// then throws ``HeraldError/Code/invalidRequest``.
    public var dataTask: DataTask.Type
    /// The class of upload tasks; default ``UploadTask``.
    public var uploadTask: UploadTask.Type
    /// The class of download tasks; default ``DownloadTask``.
    public var downloadTask: DownloadTask.Type

    /// Names the classes a session instantiates; each defaults to Herald's own.
    /// - Parameters:
    ///   - dataTask: The class of data tasks.
    ///   - uploadTask: The class of upload tasks.
    ///   - downloadTask: The class of download tasks.
    public init(
        dataTask: DataTask.Type = DataTask.self, uploadTask: UploadTask.Type = UploadTask.self,
        downloadTask: DownloadTask.Type = DownloadTask.self
    ) {
        self.dataTask = dataTask
        self.uploadTask = uploadTask
        self.downloadTask = downloadTask
    }
}

/// What a session prepared for one new task, handed to the `required init(_:)` of the class it
/// instantiates (see ``TaskClasses``).
///
/// Opaque: only the session makes one, and a subclass's initializer passes it on to `super.init(_:)`
/// unchanged, once.
public struct TaskCreation: Sendable {
    /// What differs between the kinds of task.
    enum Kind: Sendable {
        case data
        case upload(UploadTask.Body)
        case download(temporaryURL: URL, resumedFrom: DownloadResumeData?, destination: DownloadDestination?)
        /// The download task `dataTask` becomes: the same task (identifier, state, transfer, progress,
        /// completion handler) under another class, writing the rest of the body to `temporaryURL`.
        case becomingDownload(DataTask, temporaryURL: URL)
    }

    let session: SessionManager
    let identifier: Int
    let request: Request
    /// The caller's completion and progress handlers.
    let callbacks: TaskCallbacks
    let kind: Kind
    /// What a data or upload task does with its response body.
    let bodyHandling: ResponseBodyHandling
}
