import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import HeraldEngine

/// Creates and manages tasks that share a configuration, a connection pool and a notification center:
/// Herald's `AFURLSessionManager`.
///
/// Every task and the session itself announce their lifecycle on ``notificationCenter`` — see
/// `taskDidResume`, `taskDidSuspend`, `taskDidComplete` and `sessionDidInvalidate` — from one serial
/// context per session, in causal order. Completion handlers run on ``completionQueue``.
///
/// A session keeps its connection pool until ``invalidate(cancelingTasks:)``; a session that is no
/// longer referenced releases it too. But each task holds its session for as long as the task object lives,
/// completed or not, and the session lists each task in ``tasks`` until it completes: a session stays
/// referenced, its pool open, while any of its tasks is outstanding or you still hold any of its task objects.
/// A task you make and never resume stays listed, holding the session (and, made from resume data, its claim
/// on the partial file), until you cancel it or invalidate the session with its tasks cancelled. To release a
/// session's connections, call ``invalidate(cancelingTasks:)`` rather than count on its last reference going.
public final class SessionManager: Sendable {
    struct State {
        /// Active, invalidating, closing or invalidated, and the tasks listed (see ``SessionStateMachine``).
        var lifecycle = SessionStateMachine<SessionTask>()
        var responseSerializer: any ResponseSerializer = JSONResponseSerializer()
        /// Every hook of the session, in one value (see `SessionHooks`).
        var hooks = SessionHooks()
        var interceptor: (any RequestInterceptor)?
        var taskClasses = TaskClasses()
    }

    /// The partial files that tasks made from resume data continue, until each task completes: one writer per
    /// file, however many threads, and sessions, make tasks from the same resume data at once (resume data may
    /// be continued by any session of the process).
    static let claimedPartialFiles = Locked<Set<String>>([])

    private static let identifiers = Atomic<Int>(0)

    /// The session's identifier, unique within the process; carried by every lifecycle payload.
    public let identifier: Int
    /// The configuration the session was created with.
    public let configuration: SessionConfiguration
    /// Where the session's and its tasks' lifecycle notifications are posted.
    public let notificationCenter: NotificationHub
    /// Where completion handlers and progress handlers run. Default: a serial queue the session owns
    /// (never the main queue, which on Linux does not run while the main thread is blocked). Nothing the
    /// session's transfers need runs here: a slow handler delays the handlers and hooks queued behind it,
    /// never another task's redirect, retry, authentication round-trip or response. A task's progress and
    /// body blocks run before its completion handler. The library never keeps this queue's thread waiting
    /// for anything.
    public let completionQueue: DispatchQueue
    /// When set, every completion handler runs inside this group.
    public let completionGroup: DispatchGroup?

    let eventPoster: SessionEventPoster
    /// Marks the event and completion queues, where a blocking wait for the invalidation must not start.
    let queueMarker = SessionQueueMarker()
    /// Whether ``completionQueue`` is the session's own serial queue (not one the caller passed in). Then
    /// serialization runs on it directly instead of on the hook queue first: one thread hand-off fewer per
    /// task, and the caller's code never waits behind it because nothing else runs there.
    let ownsCompletionQueue: Bool
    /// ``SessionConfiguration/allowedProtocols`` sorted and joined with commas once: curl's protocol list,
    /// set on every transfer.
    let allowedProtocolList: String
    /// Why ``configuration``'s settings can't be used, found once when the session was made: every task
    /// factory throws it.
    let settingsProblem: HeraldError?
    /// What a request with no header fields of its own sends: the session's additional headers, then
    /// ``DefaultHeaders``' fields. Made once and shared, so such a request copies no list.
    let defaultRequestHeaders: HeaderFields
    /// Where download tasks write their temporary files: a private folder made with the first download task.
    let downloadDirectory: SessionTemporaryDirectory
    /// The cache keys a `stale-while-revalidate` revalidation is running for: a second hit on the entry meanwhile
    /// starts none of its own.
    let backgroundRevalidations = Locked<Set<String>>([])
    let engine: Engine
    /// The session's cookies: ``SessionConfiguration/httpCookieStore``, or an in-memory store of its own.
    /// Used only when ``SessionConfiguration/httpShouldSetCookies`` is `true`.
    public let cookieStore: CookieStore
    let multi: MultiHandle?
    let state = Locked(State())
    /// The tasks the engine's current loop iteration completed, dispatched to the completion queue together
    /// at its end (see ``complete(_:with:)``). Written on the loop thread; locked because the session is
    /// shared, never contended.
    let completedInIteration = Locked<[CompletedTask]>([])

    /// Creates a session.
    /// - Parameters:
    ///   - configuration: Timeouts, headers, limits and protocols; default ``SessionConfiguration/default``.
    ///   - notificationCenter: Where lifecycle notifications go; default the process-wide
    ///     `NotificationHub.shared`.
    ///   - completionQueue: Where completion and progress handlers run; default a serial queue of the
    ///     session's own.
    ///   - completionGroup: A group every completion handler runs in; default none.
    public convenience init(
        configuration: SessionConfiguration = .default,
        notificationCenter: NotificationHub = .shared,
        completionQueue: DispatchQueue? = nil,
        completionGroup: DispatchGroup? = nil
    ) {
        self.init(
            configuration: configuration, notificationCenter: notificationCenter, completionQueue: completionQueue,
            completionGroup: completionGroup, engine: .shared)
    }

    init(
        configuration: SessionConfiguration, notificationCenter: NotificationHub, completionQueue: DispatchQueue?,
        completionGroup: DispatchGroup?, engine: Engine
    ) {
        let identifier = Self.identifiers.add(1, ordering: .relaxed).newValue
        self.identifier = identifier
        self.configuration = configuration
        self.notificationCenter = notificationCenter
        self.completionQueue = completionQueue ?? DispatchQueue(label: "herald.session.\(identifier).completion")
        self.ownsCompletionQueue = completionQueue == nil
        self.allowedProtocolList = configuration.allowedProtocols.sorted().joined(separator: ",")
        self.settingsProblem = configuration.settingsProblem()
        self.defaultRequestHeaders =
            Self.requestHeaders(HTTPHeaders(), adding: configuration.httpAdditionalHeaders)
            .engineFields
        self.completionGroup = completionGroup
        self.engine = engine
        self.downloadDirectory = SessionTemporaryDirectory(parent: configuration.temporaryDirectory)
        // The event queue is a serial queue of its own: a slow `.posting` observer delays the session's
        // later notifications, never a completion handler or a transfer.
        self.eventPoster = SessionEventPoster(center: notificationCenter, sessionIdentifier: identifier)
        self.cookieStore = configuration.httpCookieStore ?? CookieStore()
        queueMarker.mark(eventPoster.eventQueue)
        // Only a queue of the session's own: a caller's queue may be concurrent, or shared with other code.
        if completionQueue == nil { queueMarker.mark(self.completionQueue) }
        self.multi = MultiHandle(
            engine: engine,
            options: .init(
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                maximumConnectionsTotal: configuration.maximumConnectionsTotal))
        multi?.reportConnectionChanges(
            to: eventPoster.connectionChanges(of: self), while: eventPoster.connectionChangesObserved)
    }

    deinit {
        if let multi {
            engine.execute(.closePool(TransferError(.sessionInvalidated, "The session was released.")), on: multi)
        }
        // No task is left to use the session's temporary folder (tasks hold their session); an empty one goes, one
        // holding files kept for resume data or a failed move stays, as after an invalidation.
        downloadDirectory.removeIfEmpty()
    }

    /// The serializer applied to each data task's response when it completes. Default
    /// ``JSONResponseSerializer``, as in AFNetworking. Read when a task completes, so a change applies to
    /// tasks completing afterwards.
    public var responseSerializer: any ResponseSerializer {
        get { state.withLock { $0.responseSerializer } }
        set { state.withLock { $0.responseSerializer = newValue } }
    }

    /// Adapts every task's requests and decides about retrying its failed attempts: Alamofire's session
    /// interceptor (see ``RequestInterceptor``, and ``RetryPolicy`` for a ready retrier).
    ///
    /// Read when a task starts and after each failed attempt, so a change applies to attempts that start
    /// afterwards. A task's own ``SessionTask/interceptor`` runs before it. A retried task stays one task:
    /// one `taskDidResume`, one `taskDidComplete`, and a `taskWillRetry` for each retry in between.
    /// Default `nil`: requests are sent as created and never retried.
    public var interceptor: (any RequestInterceptor)? {
        get { state.withLock { $0.interceptor } }
        set { state.withLock { $0.interceptor = newValue } }
    }

    /// The classes the session instantiates for its tasks: set it to have the session hand out your own
    /// subclasses of ``DataTask``, ``UploadTask`` and ``DownloadTask`` (see ``TaskClasses``).
    ///
    /// Read each time a factory creates a task, so a change applies to tasks created afterwards. Safe to
    /// change from any thread. Default: Herald's own classes.
    public var taskClasses: TaskClasses {
        get { state.withLock { $0.taskClasses } }
        set { state.withLock { $0.taskClasses = newValue } }
    }

    /// The credentials the session answers HTTP authentication challenges with by default (see
    /// ``AuthenticationDisposition/performDefaultHandling``). Empty at first; safe to change from any thread.
    public let credentialStore = CredentialStore()

    /// Reads the session's hooks under the lock, without copying them. Copy out the closure you need and call
    /// it after `body` returns: never call a hook under the lock.
    func readHooks<Value>(_ body: (borrowing SessionHooks) -> Value) -> Value {
        state.withLock { body($0.hooks) }
    }

    /// Changes the session-level hooks under the lock.
    func updateHooks(_ body: (inout SessionHooks) -> Void) {
        state.withLock { body(&$0.hooks) }
    }

    /// Lists `replacement` where `task` was (same identifier): a data task that became a download.
    /// Returns `false` when `task` is no longer listed (it completed meanwhile).
    func replace(_ task: SessionTask, with replacement: SessionTask) -> Bool {
        let action = state.withLock {
            $0.lifecycle.replace(task, with: replacement, identifier: task.taskIdentifier)
        }
        switch action {
        case .replaced: return true
        case .notListed: return false
        }
    }

    /// The tasks that have not completed yet, in creation order.
    public var tasks: [SessionTask] {
        state.withLock { $0.lifecycle.listedTasks }
    }

    /// The data tasks that have not completed yet, in creation order.
    ///
    /// Upload tasks are not included (they are listed by ``uploadTasks``), as with URLSession's `getTasks`.
    public var dataTasks: [DataTask] { tasks.compactMap { $0 is UploadTask ? nil : $0 as? DataTask } }

    /// The upload tasks that have not completed yet, in creation order.
    public var uploadTasks: [UploadTask] { tasks.compactMap { $0 as? UploadTask } }

    /// The download tasks that have not completed yet, in creation order.
    public var downloadTasks: [DownloadTask] { tasks.compactMap { $0 as? DownloadTask } }

    /// Whether ``invalidate(cancelingTasks:)`` has been called.
    public var isInvalidated: Bool { state.withLock { $0.lifecycle.isInvalidated } }

    // MARK: - factories

    /// Creates a suspended data task; call ``SessionTask/resume()`` to start it.
    ///
    /// - Parameters:
    ///   - request: The request. It is validated now: see ``Request``.
    ///   - uploadProgress: Called with the request body's progress on ``completionQueue``, coalesced,
    ///     never after the completion handler started.
    ///   - downloadProgress: Called with the response body's progress, the same way.
    ///   - completionHandler: Called exactly once on ``completionQueue`` with the response, the
    ///     serializer's output and the error, before `taskDidComplete` is posted.
    /// - Returns: The task, suspended.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/sessionInvalidated`` after
    ///   ``invalidate(cancelingTasks:)``, or a validation error for a malformed request.
    public func dataTask(
        with request: Request,
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: TaskCompletionHandler? = nil
    ) throws(HeraldError) -> DataTask {
        try makeDataTask(
            with: request, bodyHandling: .serialized,
            callbacks: TaskCallbacks(
                completion: completionHandler, uploadProgress: uploadProgress, downloadProgress: downloadProgress))
    }

    /// Makes a data task of the class ``taskClasses`` names, whatever the factory: the closure factories, the
    /// verbs, the `async` forms and the streamed bodies all come here, so a subclass sees every task.
    func makeDataTask(
        with request: Request, bodyHandling: ResponseBodyHandling, callbacks: TaskCallbacks
    ) throws(HeraldError) -> DataTask {
        try request.validate(allowedProtocols: configuration.allowedProtocols)
        let dataTaskClass = taskClasses.dataTask
        guard !(dataTaskClass is UploadTask.Type) else {
            throw HeraldError(
                .invalidRequest, "taskClasses.dataTask is an UploadTask subclass; name it in taskClasses.uploadTask.")
        }
        return try makeTask(dataTaskClass.init, request: request, callbacks: callbacks, bodyHandling: bodyHandling) {
            _ in .data
        }
    }

    /// The one path by which a session makes a task: it takes an identifier, prepares the task's
    /// ``TaskCreation`` (what `kind` says for that identifier) and runs `make` — the initializer of the class
    /// ``taskClasses`` names, which may be the caller's — outside the session's lock, then lists the task.
    func makeTask<Made: SessionTask>(
        _ make: (TaskCreation) -> Made, request: Request, callbacks: TaskCallbacks,
        bodyHandling: ResponseBodyHandling = .serialized, kind: (_ identifier: Int) -> TaskCreation.Kind
    ) throws(HeraldError) -> Made {
        if let settingsProblem { throw settingsProblem }
        try configuration.proxy?.validate()
        try configuration.validateAdditionalHeaders()
        guard multi != nil else {
            throw HeraldError(.internal, "libcurl could not create a connection pool for this session.")
        }
        let identifier: Int
        switch state.withLock({ $0.lifecycle.taskRequested() }) {
        case .make(let taken): identifier = taken
        case .refuse: throw Self.refusal
        }
        let task = make(
            TaskCreation(
                session: self, identifier: identifier, request: request, callbacks: callbacks,
                kind: kind(identifier), bodyHandling: bodyHandling))
        switch state.withLock({ $0.lifecycle.taskMade(task, identifier: identifier) }) {
        case .listed:
            return task
        case .refuse:
            // Invalidated while `make` ran: the task, never resumed nor listed, is dropped. Progress objects its
            // initializer made hold it until it completes, which it never will.
            task.abandonProgress()
            throw Self.refusal
        }
    }

    /// The error a factory throws once the session is invalidated.
    static var refusal: HeraldError {
        HeraldError(.sessionInvalidated, "The session has been invalidated; it creates no more tasks.")
    }

    /// Removes the download directory (if empty) once invalidation has finished; before that, finishing
    /// the invalidation removes it. On the event queue, where invalidation finishes.
    func removeDownloadDirectoryAfterInvalidation() {
        eventPoster.async { [self] in
            if state.withLock({ $0.lifecycle.hasFinishedInvalidating }) { downloadDirectory.removeIfEmpty() }
        }
    }
}
