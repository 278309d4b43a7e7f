import Foundation

/// How ``SessionManager/events(for:options:)`` connects and reconnects.
public struct EventSourceOptions: Sendable, Equatable {
    /// The wait before reconnecting until the stream sets one with `retry`. Default 3 seconds.
    public var defaultReconnectionTime: Duration
    /// How many connections in a row may fail before one is accepted (a `200` with `text/event-stream`) before
    /// the sequence throws the last error; `nil` (the default) reconnects for as long as you iterate, as the
    /// standard's `EventSource` does. A connection that was accepted and later ends with an error (an idle
    /// timeout on a quiet stream, a proxy that cuts long responses) starts the count again.
    public var maximumConsecutiveFailures: Int?
    /// The watermarks of each connection's body; default ``StreamBufferPolicy/default``.
    public var bufferPolicy: StreamBufferPolicy
    /// The longest wait before reconnecting: a longer `retry` from the stream waits this long instead.
    /// Default 1 hour.
    public var maximumReconnectionTime: Duration
    /// The most bytes one line, or one event's data, may take; a stream that sends more ends the sequence
    /// with ``HeraldError/Code/responseTooLarge`` (not retried: the server would send it again). Default
    /// ``ServerSentEventParser/defaultMaximumEventSize``, 16 MiB.
    public var maximumEventSize: Int

    /// The defaults: 3 seconds, no limit on failures, the default buffer policy, at most 1 hour between
    /// connections, events of up to 16 MiB.
    public static let `default` = EventSourceOptions()

    /// Creates options.
    /// - Parameters:
    ///   - defaultReconnectionTime: The wait before reconnecting until the stream sets one; default 3 s.
    ///   - maximumConsecutiveFailures: Failed connections in a row before giving up; default `nil`, no limit.
    ///   - bufferPolicy: The watermarks of each connection's body.
    ///   - maximumReconnectionTime: The longest wait before reconnecting, whatever the stream's `retry`
    ///     says; default 1 hour.
    ///   - maximumEventSize: The most bytes one line, or one event's data, may take; default 16 MiB.
    public init(
        defaultReconnectionTime: Duration = .seconds(3), maximumConsecutiveFailures: Int? = nil,
        bufferPolicy: StreamBufferPolicy = .default, maximumReconnectionTime: Duration = .seconds(3600),
        maximumEventSize: Int = ServerSentEventParser.defaultMaximumEventSize
    ) {
        self.defaultReconnectionTime = defaultReconnectionTime
        self.maximumConsecutiveFailures = maximumConsecutiveFailures
        self.bufferPolicy = bufferPolicy
        self.maximumReconnectionTime = maximumReconnectionTime
        self.maximumEventSize = maximumEventSize
    }
}

/// Server-sent events as an asynchronous sequence, reconnecting as the WHATWG HTML standard's `EventSource`
/// does: what ``SessionManager/events(for:options:)`` returns.
///
/// Iterating connects (the request with `Accept: text/event-stream`; `Cache-Control: no-cache` and
/// `Pragma: no-cache`, what Fetch puts on the wire for `EventSource`'s "no-store" cache mode;
/// `Accept-Encoding: identity`, since a streamed body is not decoded; and `Last-Event-ID` once an event set an
/// ID) and yields each event as its blank line arrives. When the connection ends — the server closes it, or it
/// fails with a transport error — the sequence waits the stream's `retry` time
/// (``EventSourceOptions/defaultReconnectionTime`` until one is set; when connections fail one after another
/// before one is accepted, from the second on at least 100 milliseconds, doubled for each
/// further failure, as the standard allows, up to ``EventSourceOptions/maximumReconnectionTime``; when they end
/// one after another within a second of their request without an event — a server that closes an empty stream
/// at once, whatever its `retry` — the same, but never longer than the stream's `retry` or
/// ``EventSourceOptions/defaultReconnectionTime``, whichever is longer), posts
/// ``HeraldNotifications/NotificationName/eventSourceWillReconnect`` and connects again with `Last-Event-ID`;
/// the incomplete event the ended connection was sending is discarded, so an event is neither lost (the server
/// resends from the ID) nor repeated. Each connection is a streamed data task of the session, announced with
/// `taskDidResume` and `taskDidComplete`.
///
/// It ends — returns `nil` — when the server answers `204 No Content`. It throws
/// ``HeraldError/Code/unacceptableStatusCode`` for another status than 200,
/// ``HeraldError/Code/unacceptableContentType`` for a type other than `text/event-stream` or a body in a
/// content coding (`Content-Encoding: gzip`, which a streamed body is not decoded from; none is retried),
/// ``HeraldError/Code/cancelled`` when the iterating Swift task is cancelled,
/// ``HeraldError/Code/sessionInvalidated`` after the session is invalidated (see below), and the last transport
/// error after ``EventSourceOptions/maximumConsecutiveFailures`` failed connections in a row.
/// Dropping the iterator stops the current connection.
///
/// The sequence looks at the session's invalidation when a connection ends and while it waits to reconnect, not
/// while a connection is open. ``SessionManager/invalidate(cancelingTasks:)`` with `cancelingTasks: true`
/// cancels the open connection (the part of its body the sequence has not yet read is dropped), and the
/// sequence throws ``HeraldError/Code/sessionInvalidated``, not ``HeraldError/Code/cancelled``. With
/// `cancelingTasks: false` an open connection goes on, its events with it, until the server ends it (until then
/// it keeps the session from finishing its invalidation); where the sequence would then reconnect, it throws
/// ``HeraldError/Code/sessionInvalidated`` instead. A wait to reconnect ends early when the session posts
/// `sessionDidInvalidate`, once its tasks have ended; either way no connection follows it, and the sequence
/// throws ``HeraldError/Code/sessionInvalidated``.
///
/// It yields events only. To learn that a connection was accepted before its first event arrives — the
/// `EventSource`'s `open` event — iterate ``withOpen`` instead: the same connections, with an
/// ``EventSourceElement/open(_:)`` before each one's events.
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent
    /// What iteration throws.
    public typealias Failure = HeraldError

    let session: SessionManager
    let request: Request
    let options: EventSourceOptions

    /// Makes an iterator: each one has its own connections.
    public func makeAsyncIterator() -> Iterator {
        Iterator(connection: EventSourceConnection(session: session, request: request, options: options))
    }

    /// Yields the events; see ``ServerSentEvents``.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: EventSourceConnection

        /// The next event, or `nil` after a `204`.
        /// - Throws: ``HeraldError``, as ``ServerSentEvents`` says.
        public mutating func next() async throws(HeraldError) -> ServerSentEvent? {
            try await connection.next()
        }

        /// The next event, or `nil` after a `204`, on the caller's isolation.
        /// - Parameter actor: The caller's actor, if any.
        /// - Throws: ``HeraldError`` as ``next()`` does.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(HeraldError)
            -> ServerSentEvent?
        {
            try await connection.next()
        }
    }
}

/// What ``ServerSentEvents/withOpen`` yields: each accepted connection, then that connection's events.
///
/// The counterparts of the WHATWG `EventSource`'s `open` and `message` events.
public enum EventSourceElement: Sendable, Hashable {
    /// A connection was accepted — its head is a `200` with the content type `text/event-stream` — before any
    /// of its events: once per connection, the first one and each reconnection, as soon as the head arrives,
    /// even when the server waits before its first event.
    case open(HTTPResponse)
    /// An event of the connection last opened.
    case event(ServerSentEvent)
}

extension ServerSentEvents {
    /// The same connections, with an ``EventSourceElement/open(_:)`` before each connection's events: what
    /// the WHATWG `EventSource`'s `open` event tells a page.
    ///
    /// ```swift
    /// for try await element in session.events(for: Request(url: url)).withOpen {
    ///     switch element {
    ///     case .open(let response): print("connected:", response.statusCode)
    ///     case .event(let event): print("\(event.id) \(event.event): \(event.data)")
    ///     }
    /// }
    /// ```
    ///
    /// Everything else is as for ``ServerSentEvents``: the requests, the reconnections and their
    /// notifications, what ends the sequence and what it throws. A connection that is refused (another
    /// status, another content type, a `204`) or fails before its head opens nothing.
    public var withOpen: WithOpen { WithOpen(events: self) }

    /// Server-sent events with an ``EventSourceElement/open(_:)`` for each accepted connection: what
    /// ``ServerSentEvents/withOpen`` returns.
    public struct WithOpen: AsyncSequence, Sendable {
        /// A connection's opening or one of its events.
        public typealias Element = EventSourceElement
        /// What iteration throws.
        public typealias Failure = HeraldError

        let events: ServerSentEvents

        /// Makes an iterator: each one has its own connections.
        public func makeAsyncIterator() -> Iterator {
            Iterator(
                connection: EventSourceConnection(
                    session: events.session, request: events.request, options: events.options, yieldsOpen: true))
        }

        /// Yields each connection's opening and its events; see ``ServerSentEvents/withOpen``.
        public struct Iterator: AsyncIteratorProtocol {
            let connection: EventSourceConnection

            /// The next opening or event, or `nil` after a `204`.
            /// - Throws: ``HeraldError``, as ``ServerSentEvents`` says.
            public mutating func next() async throws(HeraldError) -> EventSourceElement? {
                try await connection.nextElement()
            }

            /// The next opening or event, or `nil` after a `204`, on the caller's isolation.
            /// - Parameter actor: The caller's actor, if any.
            /// - Throws: ``HeraldError`` as ``next()`` does.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(HeraldError)
                -> EventSourceElement?
            {
                try await connection.nextElement()
            }
        }
    }
}

/// One iterator's connections, parser and reconnection state.
final class EventSourceConnection: @unchecked Sendable {
    // Safety: used by the one iterator that owns it, whose `next()` calls don't overlap (an async iterator is
    // iterated from one task at a time).

    let session: SessionManager
    let request: Request
    let options: EventSourceOptions
    private var parser: ServerSentEventParser
    private var ready: [ServerSentEvent] = []
    private var readyIndex = 0
    private var body: ResponseBodyStream.Iterator?
    private var currentTask: DataTask?
    private var connections = 0
    private var failuresInARow = 0
    /// Failed connections in a row that were never accepted: what ``EventSourceOptions/maximumConsecutiveFailures``
    /// limits. An accepted connection that later fails (an idle timeout on a quiet stream) backs off, but is not
    /// one of them.
    private var refusedInARow = 0
    /// Connections in a row that ended without an event within ``shortConnection`` of their request.
    private var shortConnectionsInARow = 0
    /// When the current connection's request was made.
    private var connectedAt = ContinuousClock.now
    /// Whether the current connection has given an event.
    private var connectionGaveEvent = false
    private var isFinished = false
    /// Whether ``nextElement()`` yields each accepted connection's head before its events.
    private let yieldsOpen: Bool
    /// The head of the connection just accepted, until it is yielded.
    private var opened: HTTPResponse?

    init(session: SessionManager, request: Request, options: EventSourceOptions, yieldsOpen: Bool = false) {
        self.session = session
        self.request = request
        self.options = options
        self.yieldsOpen = yieldsOpen
        // A `Last-Event-ID` of the caller's (an ID kept from an earlier stream) goes with the first connection,
        // and with later ones until the stream sets an `id` of its own.
        self.parser = ServerSentEventParser(
            lastEventID: request.headers["Last-Event-ID"] ?? "", maximumEventSize: options.maximumEventSize)
    }

    /// The next event, for ``ServerSentEvents``.
    func next() async throws(HeraldError) -> ServerSentEvent? {
        while let element = try await nextElement() {
            if case .event(let event) = element { return event }
        }
        return nil
    }

    /// The next opening (when ``yieldsOpen``) or event.
    func nextElement() async throws(HeraldError) -> EventSourceElement? {
        while true {
            if let head = opened {
                // Set by `connect()`, which runs only once the previous connection's events were all taken.
                opened = nil
                return .open(head)
            }
            if readyIndex < ready.count {
                defer { readyIndex += 1 }
                return .event(ready[readyIndex])
            }
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            // Once the events before it are taken.
            if parser.exceededMaximumEventSize, body != nil { try oversizeEvent() }
            if isFinished { return nil }
            guard var stream = body else {
                try await connect()
                continue
            }
            do throws(HeraldError) {
                let chunk = try await stream.next()
                body = stream
                if let chunk {
                    ready = parser.parse(chunk)
                    if !ready.isEmpty { connectionGaveEvent = true }
                } else {
                    try await connectionEnded(error: nil)
                }
            } catch {
                try await connectionEnded(error: error)
            }
        }
    }

    /// Opens the next connection; a transport error waits and tries again.
    private func connect() async throws(HeraldError) {
        var request = request
        request.headers.replaceOrAdd(name: "Accept", value: "text/event-stream")
        // EventSource fetches with cache mode "no-store", which Fetch sends as these two fields.
        request.headers.replaceOrAdd(name: "Cache-Control", value: "no-cache")
        request.headers.replaceOrAdd(name: "Pragma", value: "no-cache")
        // A streamed body is passed on as it arrives, never decoded: a compressed stream would be parsed as bytes
        // of nothing, whatever the session's own fields ask for.
        request.headers.replaceOrAdd(name: "Accept-Encoding", value: "identity")
        if parser.lastEventID.isEmpty {
            request.headers.remove(name: "Last-Event-ID")
        } else {
            request.headers.replaceOrAdd(name: "Last-Event-ID", value: parser.lastEventID)
        }
        connections += 1
        connectedAt = .now
        connectionGaveEvent = false
        let consumer: StreamConsumer
        let head: Result<HTTPResponse, HeraldError>
        do throws(HeraldError) {
            (consumer, head) = try await session.openStream(for: request, bufferPolicy: options.bufferPolicy)
        } catch {
            // The request or the policy is malformed, or the session is invalidated: nothing to retry.
            isFinished = true
            throw error
        }
        currentTask = consumer.task
        let response: HTTPResponse
        switch head {
        case .success(let head): response = head
        case .failure(let error): return try await connectionEnded(error: error)
        }
        if response.statusCode == 204 {
            // The server's way to end the stream for good: the task ends as the transfer does, a success,
            // not cancelled by dropping its consumer while a 204's (empty) body is still on its way.
            isFinished = true
            var rest = ResponseBodyStream(consumer: consumer).makeAsyncIterator()
            while try await rest.next() != nil {}
            return
        }
        guard response.statusCode == 200 else {
            throw refuse(
                consumer,
                HeraldError(
                    .unacceptableStatusCode, "The event stream answered \(response.statusCode).", url: response.url,
                    statusCode: response.statusCode))
        }
        let mediaType = response.headers["Content-Type"]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "text/event-stream" else {
            throw refuse(
                consumer,
                HeraldError(
                    .unacceptableContentType,
                    "The event stream's Content-Type is \(response.headers["Content-Type"] ?? "missing"), "
                        + "not text/event-stream.", url: response.url, statusCode: response.statusCode))
        }
        if let coding = response.headers["Content-Encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
            !coding.isEmpty, coding != "identity"
        {
            throw refuse(
                consumer,
                HeraldError(
                    .unacceptableContentType,
                    "The event stream came in the content coding \(coding), which a stream is not decoded from; it "
                        + "was asked for with Accept-Encoding: identity.", url: response.url,
                    statusCode: response.statusCode))
        }
        body = ResponseBodyStream(consumer: consumer).makeAsyncIterator()
        // Accepted: the server is there. Browsers reset their backoff here too; a stream that is quiet for longer
        // than an idle timeout would otherwise back off, connection after connection, to an hour between them.
        failuresInARow = 0
        refusedInARow = 0
        if yieldsOpen { opened = response }
    }

    /// Ends the sequence on a connection it refuses, and the connection's task with the same error: its
    /// `taskDidComplete` says why, not that it was cancelled.
    private func refuse(_ consumer: StreamConsumer, _ error: HeraldError) -> HeraldError {
        isFinished = true
        consumer.task.stop(reporting: error)
        return error
    }

    /// The connection ended (`error` nil: the server closed the stream): reconnect after the delay, or throw
    /// an error that must not be retried.
    private func connectionEnded(error: HeraldError?) async throws(HeraldError) {
        let wasAccepted = body != nil
        body = nil
        parser.endOfStream()
        if !connectionGaveEvent, ContinuousClock.now - connectedAt < Self.shortConnection {
            shortConnectionsInARow += 1
        } else {
            shortConnectionsInARow = 0
        }
        if let error {
            if error.code == .cancelled, !Task.isCancelled, session.isInvalidated {
                // Not the iterating task's cancellation: the session's, whose `invalidate(cancelingTasks: true)`
                // cancelled the connection. The sequence says which, as a wait to reconnect does.
                isFinished = true
                throw sessionInvalidated
            }
            guard Self.reconnects(after: error), !Task.isCancelled else {
                isFinished = true
                throw error
            }
            failuresInARow += 1
            if !wasAccepted { refusedInARow += 1 }
            if let limit = options.maximumConsecutiveFailures, refusedInARow >= limit {
                isFinished = true
                throw error
            }
        }
        guard !session.isInvalidated else {
            isFinished = true
            throw sessionInvalidated
        }
        let retry = parser.reconnectionTime.map { Duration.milliseconds($0) } ?? options.defaultReconnectionTime
        let afterFailures = Self.reconnectionDelay(
            retry: retry, failuresInARow: error == nil ? 0 : failuresInARow, maximum: options.maximumReconnectionTime)
        // Quick connections without an event back off only up to the default reconnection time (or the stream's
        // longer retry): a server that ends an empty stream at once is paced, and one that is polled for news
        // (it answers "nothing yet" with an empty stream) is still asked as often as it asks to be.
        let afterShortConnections = min(
            Self.reconnectionDelay(
                retry: retry, failuresInARow: shortConnectionsInARow, maximum: options.maximumReconnectionTime),
            max(retry, options.defaultReconnectionTime))
        let delay = max(afterFailures, afterShortConnections)
        // No reconnection is announced for a consumer that is gone: the wait would end at once.
        if Task.isCancelled {
            isFinished = true
            throw cancelled
        }
        if let task = currentTask {
            session.eventPoster.postReconnection(
                of: task, attempt: connections + 1, error: error, lastEventID: parser.lastEventID, delay: delay,
                unlessInvalidated: { [session] in session.isInvalidated })
        }
        currentTask = nil
        try await waitBeforeReconnecting(delay)
    }

    /// Waits `delay` before the next connection. The session's invalidation (its `sessionDidInvalidate`, posted
    /// once its tasks have ended) ends the wait, and the sequence, with
    /// ``HeraldError/Code/sessionInvalidated``: no connection can follow, and a consumer would otherwise
    /// wait up to ``EventSourceOptions/maximumReconnectionTime`` for nothing. Cancelling the iterating task ends
    /// it with ``HeraldError/Code/cancelled``.
    private func waitBeforeReconnecting(_ delay: Duration) async throws(HeraldError) {
        let sleep = Task { try await Task.sleep(for: delay) }
        let session = session
        // Registered before the state is read again, so an invalidation in between is seen one way or the other.
        let token = session.notificationCenter.addObserver(for: .sessionDidInvalidate, object: session) { _ in
            sleep.cancel()
        }
        defer { token.cancelWithoutWaiting() }
        if session.isInvalidated { sleep.cancel() }
        let slept = await withTaskCancellationHandler {
            (try? await sleep.value) != nil
        } onCancel: {
            sleep.cancel()
        }
        guard !slept else { return }
        isFinished = true
        if session.isInvalidated, !Task.isCancelled {
            throw sessionInvalidated
        }
        throw cancelled
    }

    /// The wait before the next connection: the stream's `retry`; from the second failed connection in a row
    /// (none of them accepted, or each ended without an event within ``shortConnection``), at least
    /// `minimumFailureDelay`, doubled for each one after that (the standard's "exponential backoff"), so a
    /// server that is down, or that closes every stream at once, isn't asked again and again without a pause,
    /// whatever its last `retry` said; never more than `maximum`.
    static func reconnectionDelay(retry: Duration, failuresInARow: Int, maximum: Duration) -> Duration {
        guard failuresInARow > 1 else { return min(retry, maximum) }
        var delay = max(retry, minimumFailureDelay)
        for _ in 2..<min(failuresInARow, 64) where delay < maximum { delay *= 2 }
        return min(delay, maximum)
    }

    /// How the sequence ends when the iterating task is cancelled.
    private var cancelled: HeraldError {
        HeraldError(.cancelled, "The event stream was cancelled.", url: request.url)
    }

    /// How the sequence ends once the session is invalidated.
    private var sessionInvalidated: HeraldError {
        HeraldError(.sessionInvalidated, "The session was invalidated.", url: request.url)
    }

    /// The shortest wait after a failed connection.
    static let minimumFailureDelay = Duration.milliseconds(100)

    /// A connection that ends without an event this soon after its request counts toward the backoff, as a
    /// failed one does; one that lasted longer (a quiet stream cut by an idle timeout) doesn't.
    static let shortConnection = Duration.seconds(1)

    /// The stream sent a line or an event over ``EventSourceOptions/maximumEventSize``: the connection stops with
    /// the error if it is still running, and its task then completes with it too (not as cancelled; a task that
    /// already finished keeps its outcome), and the sequence ends with it, after the events that came before it.
    private func oversizeEvent() throws(HeraldError) {
        let error = HeraldError(
            .responseTooLarge,
            "The event stream sent a line or an event longer than \(options.maximumEventSize) bytes "
                + "(EventSourceOptions.maximumEventSize).", url: request.url)
        body?.consumer.task.stop(reporting: error)
        body = nil
        isFinished = true
        throw error
    }

    /// Whether a failed connection is one the standard reconnects after: a network error, not a refusal.
    private static func reconnects(after error: HeraldError) -> Bool {
        switch error.code {
        // A proxy that can't be reached or found is a network error as the origin's would be.
        case .networkConnectionLost, .timedOut, .cannotConnect, .cannotFindHost, .badServerResponse, .proxy: true
        default: false
        }
    }
}

extension SessionEventPoster {
    /// Queues `eventSourceWillReconnect` on the event queue, where it is dropped if `isInvalidated` says the
    /// session was invalidated meanwhile: no reconnection follows then, and nothing of the session may come
    /// after its `sessionDidInvalidate` (which an invalidation queues only after it is marked).
    func postReconnection(
        of task: SessionTask, attempt: Int, error: HeraldError?, lastEventID: String, delay: Duration,
        unlessInvalidated isInvalidated: @escaping @Sendable () -> Bool
    ) {
        guard center.hasObservers(for: .eventSourceWillReconnect) else { return }
        let payload = EventSourceReconnection(
            taskIdentifier: task.taskIdentifier, sessionIdentifier: sessionIdentifier, request: task.requestSummary,
            date: Date(), attempt: attempt, error: error, lastEventID: lastEventID,
            delay: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        let center = center
        async {
            guard !isInvalidated() else { return }
            center.post(.eventSourceWillReconnect, object: task, userInfo: payload)
        }
    }
}

extension SessionManager {
    /// Server-sent events from `request`, reconnecting with `Last-Event-ID` as the WHATWG HTML standard's
    /// `EventSource` does: see ``ServerSentEvents``.
    ///
    /// Nothing is sent until the sequence is iterated; each iterator has connections of its own. Every
    /// connection is a streamed data task of the session (`taskDidResume`, `taskDidComplete`), and every
    /// reconnection posts ``HeraldNotifications/NotificationName/eventSourceWillReconnect`` first.
    ///
    /// - Parameters:
    ///   - request: The request; `Accept`, `Cache-Control` and `Last-Event-ID` are set on each connection. A
    ///     `Last-Event-ID` of its own (an ID kept from an earlier stream) is sent until the stream sets an `id`.
    ///   - options: Reconnection and buffering; default ``EventSourceOptions/default``.
    /// - Returns: The events, in order; its ``ServerSentEvents/withOpen`` adds each connection's opening.
    public func events(for request: Request, options: EventSourceOptions = .default) -> ServerSentEvents {
        ServerSentEvents(session: self, request: request, options: options)
    }
}
