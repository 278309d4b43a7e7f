import CCurl
import CUV

/// One curl multi handle — one connection pool — driven by an engine's libuv loop.
///
/// Follows curl's `multi-uv.c`: one `uv_poll_t` per curl socket, started on the first interest and
/// stopped synchronously on `CURL_POLL_REMOVE` (curl reports the removal before it closes the fd), and
/// a ``CurlTimeout`` for curl's timeout. A stopped poll handle isn't closed: the engine keeps it for
/// the next socket with its number (``PollHandles``), usually the same connection's next transfer.
/// Messages are drained after every `curl_multi_socket_action`, and finished transfers are reported from there —
/// never from inside a curl callback, where `curl_multi_*` would fail with `CURLM_RECURSIVE_API_CALL`.
/// A second timer enforces the transfers' idle timeouts (``checkIdleTransfers()``).
package final class MultiHandle: @unchecked Sendable {
    // Safety: every member is used on the engine's loop thread only (hence `@exclusivity(unchecked)` on the
    // stored properties the loop thread touches per transfer: see `Transfer`). `init` runs on any thread but only
    // configures a multi handle nobody else can see yet; the libuv timer is initialised on the loop.

    package struct Options: Sendable {
        package var maximumConnectionsPerHost: Int
        package var maximumConnectionsTotal: Int

        package init(maximumConnectionsPerHost: Int, maximumConnectionsTotal: Int) {
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.maximumConnectionsTotal = maximumConnectionsTotal
        }
    }

    let engine: Engine
    /// The easy handles this pool's finished transfers leave for its next ones; any thread.
    package let easyHandles: EasyHandlePool
    private let multi: UnsafeMutableRawPointer
    /// When curl wants its timeout: set by its timer callback, fired on the loop.
    private let timeout = CurlTimeout()
    /// The timer of the idle check (``checkIdleTransfers()``), and when it is due on ``ActivityClock``
    /// (`nil` while it is stopped).
    let idleTimer: UnsafeMutablePointer<uv_timer_t>
    @exclusivity(unchecked) var idleCheckDue: UInt64?
    /// When a transfer that had a connection last left the pool, on ``ActivityClock``: a transfer waiting for a
    /// connection may get one then (``checkIdleTransfers()``). Loop thread only.
    @exclusivity(unchecked) var lastConnectedTransferLeft: UInt64 = 0
    /// The handles polling this pool's sockets, by socket number.
    @exclusivity(unchecked) private var polls = PollHandleTable()
    /// The number of sockets being polled. Loop thread only.
    package var pollCount: Int { polls.count }
    /// How many times a socket started being watched, and how many of those opened a new poll handle rather
    /// than start a kept one. Loop thread only.
    @exclusivity(unchecked) package private(set) var socketsWatched = 0
    @exclusivity(unchecked) package private(set) var pollHandlesOpened = 0
    /// The transfers in the pool, in no order: each knows its place (``Transfer/poolSlot``), and a
    /// finished one's easy handle leads to it through `CURLINFO_PRIVATE`, so adding and removing one hashes
    /// nothing.
    @exclusivity(unchecked) private(set) var transfers: [Transfer] = []
    @exclusivity(unchecked) private(set) var isClosed = false
    /// The pool's connections: which are open, active or idle (``ConnectionTracker``). Loop thread only.
    let connections: ConnectionTracker

    /// How many connections a pool without a total limit keeps open between transfers, idle or not.
    static let keptConnections = 64

    package init?(engine: Engine, options: Options) {
        guard let multi = curl_multi_init() else { return nil }
        self.engine = engine
        let connections = ConnectionTracker()
        self.connections = connections
        self.multi = multi
        // As many as the transfers that may run at once, within reason.
        let concurrent = options.maximumConnectionsTotal > 0 ? options.maximumConnectionsTotal : 64
        self.easyHandles = EasyHandlePool(
            capacity: min(max(concurrent, 8), 256), connections: Unmanaged.passUnretained(connections).toOpaque())
        self.idleTimer = .allocate(capacity: 1)
        let context = Unmanaged.passUnretained(self).toOpaque()
        herald_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        herald_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        herald_multi_setopt_socket_cb(multi) { easy, socket, what, context, _ in
            guard let context else { return -1 }
            Unmanaged<MultiHandle>.fromOpaque(context).takeUnretainedValue().socketChanged(easy, socket, what: what)
            return 0
        }
        herald_multi_setopt_timer_cb(multi) { _, timeoutMilliseconds, context in
            guard let context else { return -1 }
            Unmanaged<MultiHandle>.fromOpaque(context).takeUnretainedValue().timeout.schedule(timeoutMilliseconds)
            return 0
        }
        // HTTP/2 transfers to one origin share a connection as streams (curl's default since 7.62, set so that
        // it is this pool's rule, not a default). The per-host limit counts connections, not transfers: a
        // multiplexed connection carries many (up to the server's stream limit) and counts once.
        herald_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        herald_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, options.maximumConnectionsPerHost))
        herald_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, options.maximumConnectionsTotal))
        // Keep every connection the limit allows, or, without a limit, up to `keptConnections`. Left unset, curl
        // sizes its connection cache at four times the transfers in the pool at the moment one finishes, and
        // closes the oldest idle connections beyond that whenever fewer transfers than usual are running: the
        // next burst opens them again, a TCP (and TLS) handshake each.
        herald_multi_setopt_long(
            multi, CURLMOPT_MAXCONNECTS,
            options.maximumConnectionsTotal > 0 ? options.maximumConnectionsTotal : Self.keptConnections)
        engine.execute { [self] in
            timeout.start(on: engine.uvLoop) { [unowned self] in
                socketAction(herald_socket_timeout, flags: 0)
            }
            uv_timer_init(engine.uvLoop, idleTimer)
            idleTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        }
    }

    /// Has `handler` hear each change of state of the pool's connections (``ConnectionChange``), from the
    /// next one on, while `isObserved` says anyone listens (no change is made otherwise). Both run on the loop
    /// thread: they must answer at once, running no user code. Any thread; takes effect before any transfer
    /// sent to the engine after this call.
    package func reportConnectionChanges(
        to handler: @escaping @Sendable (ConnectionChange) -> Void, while isObserved: @escaping @Sendable () -> Bool
    ) {
        engine.execute { [self] in
            connections.onChange = handler
            connections.isObserved = isObserved
        }
    }

    /// The number of transfers currently in this pool. Loop thread only.
    package var activeTransferCount: Int { transfers.count }

    // MARK: - transfers

    /// Starts a transfer. Loop thread only.
    func add(_ transfer: Transfer) {
        guard !isClosed else {
            transfer.finish(error: TransferError(.sessionInvalidated, "The session's connection pool is closed."))
            return
        }
        guard let easy = transfer.makeEasyHandle(from: easyHandles) else { return }
        transfer.connections = connections
        transfer.startBodyReader(in: self)
        transfer.recentFieldValues = engine.recentFieldValues
        insert(transfer)
        transfer.addedAt = QueueClock.now
        transfer.firstAddedAt = ActivityClock.now
        let code = curl_multi_add_handle(multi, easy)
        if code != CURLM_OK {
            _ = takeOut(transfer)
            transfer.connections = nil
            transfer.finish(error: TransferError(.internal, "curl_multi_add_handle failed (\(code.rawValue))."))
            return
        }
        if let idleTimeout = transfer.idleTimeout {
            scheduleIdleCheck(at: transfer.lastActivity &+ idleTimeout &+ 1)
        }
    }

    /// Takes a transfer whose pause curl refused (it has no connection yet) out of curl while it stays in the
    /// pool: left in curl, it would still take a connection when one is free (the per-host limit's), and hold
    /// it paused, so that requests the user did not suspend wait for it. Nothing was sent without a
    /// connection, so ``unpark(_:)`` adds it again from the start. Loop thread only, outside curl callbacks.
    func park(_ transfer: Transfer) {
        guard transfer.machine.isPausePending, !transfer.isParked, let easy = transfer.easyHandle, isInPool(transfer)
        else { return }
        curl_multi_remove_handle(multi, easy)
        connections.detach(transfer)
        keepParked(transfer)
    }

    /// Marks `transfer`, out of curl, as parked until ``unpark(_:)``.
    private func keepParked(_ transfer: Transfer) {
        transfer.isParked = true
        // Out of curl, its resource timeout is the idle check's (checkIdleTransfers).
        if let resourceTimeout = transfer.resourceTimeout {
            scheduleIdleCheck(at: transfer.firstAddedAt &+ resourceTimeout)
        }
    }

    /// Adds a parked transfer to curl again, the user having resumed it. Loop thread only, outside curl callbacks.
    func unpark(_ transfer: Transfer) {
        guard transfer.isParked, let easy = transfer.easyHandle, isInPool(transfer) else { return }
        transfer.isParked = false
        // The progress callback was turned on for the pending pause, which is gone.
        herald_easy_setopt_long(easy, CURLOPT_NOPROGRESS, 1)
        guard limitsToTimeLeft(transfer, easy) else { return remove(transfer, error: transfer.resourceTimeoutError) }
        transfer.addedAt = QueueClock.now
        transfer.lastActivity = ActivityClock.now
        let code = curl_multi_add_handle(multi, easy)
        if code != CURLM_OK {
            remove(transfer, error: TransferError(.internal, "curl_multi_add_handle failed (\(code.rawValue))."))
            return
        }
        transfer.noteAttemptStart()
        if let idleTimeout = transfer.idleTimeout {
            scheduleIdleCheck(at: transfer.lastActivity &+ idleTimeout &+ 1)
        }
    }

    /// Gives curl what is left of the transfer's resource timeout, counted from its first add, for an add after
    /// the first (curl counts its own from each add); whether any is left.
    private func limitsToTimeLeft(_ transfer: Transfer, _ easy: UnsafeMutableRawPointer) -> Bool {
        guard let resourceTimeout = transfer.resourceTimeout else { return true }
        let spent = ActivityClock.now &- transfer.firstAddedAt
        guard spent < resourceTimeout else { return false }
        herald_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int((resourceTimeout - spent) / 1_000_000)))
        // No longer the profile's value: the handle is reset before another transfer takes it.
        transfer.profile = nil
        return true
    }

    /// Stops a transfer that is still in the pool and finishes it with `error`. Loop thread only.
    func remove(_ transfer: Transfer, error: TransferError) {
        if let easy = transfer.easyHandle, takeOut(transfer) {
            curl_multi_remove_handle(multi, easy)
            connections.detach(transfer)
            transfer.finish(error: error)
        } else if transfer.isHoldingResult {
            // Done on the wire and out of the pool, but held for the task's answer to its response.
            transfer.finish(error: error)
        }
    }

    /// Drains curl's messages and finishes every transfer that is done. Loop thread only.
    func processMessages() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard herald_msg_is_done(message) != 0, let easy = herald_msg_easy(message) else { continue }
            // Copy before removing the handle: the message does not survive curl_multi_remove_handle.
            let result = herald_msg_result(message)
            guard let transfer = transfer(of: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            connections.detach(transfer)
            // Still in the pool: the same transfer starts again on a fresh connection, within what is left of
            // its resource timeout.
            if transfer.retriesOnFreshConnection(after: result) {
                guard limitsToTimeLeft(transfer, easy) else {
                    if takeOut(transfer) { transfer.finish(error: transfer.resourceTimeoutError) }
                    continue
                }
                if transfer.machine.startsAgainOnFreshConnection() {
                    // Suspended: the new attempt waits out of curl for the user's resume, as a transfer whose pause
                    // came before its connection does. Added now, it would start unpaused and its response would
                    // reach a suspended task.
                    keepParked(transfer)
                    continue
                }
                if curl_multi_add_handle(multi, easy) == CURLM_OK {
                    transfer.addedAt = QueueClock.now
                    transfer.noteAttemptStart()
                    continue
                }
            }
            guard takeOut(transfer) else { continue }
            transfer.finish(result: result)
        }
        // The bodies the completion queue has let go of since: freed here, by the thread that allocated them.
        LoopThreadFrees.shared.drain(keeping: LoopThreadFrees.keptForReuse)
    }

    /// Cancels every transfer, then releases the multi handle, its sockets and its timer. Loop thread only.
    func close(cancellingWith error: TransferError) {
        guard !isClosed else { return }
        isClosed = true
        for transfer in transfers {
            remove(transfer, error: error)
        }
        // Cleanup may still report REMOVE for cached connections and -1 for the timer; both callbacks
        // are valid until it returns.
        curl_multi_cleanup(multi)
        connections.closeAll()
        easyHandles.close()
        for (socket, poll) in polls.removeAll() {
            engine.pollHandles.stop(poll, socket: socket)
        }
        timeout.close()
        uv_timer_stop(idleTimer)
        Engine.close(idleTimer)
        idleCheckDue = nil
    }

    // MARK: - the pool's transfers

    private func insert(_ transfer: Transfer) {
        transfer.poolSlot = transfers.count
        transfers.append(transfer)
    }

    private func isInPool(_ transfer: Transfer) -> Bool {
        let slot = transfer.poolSlot
        return slot >= 0 && slot < transfers.count && transfers[slot] === transfer
    }

    /// Takes `transfer` out of the pool's list, if it is there: the last one moves into its place.
    private func takeOut(_ transfer: Transfer) -> Bool {
        guard isInPool(transfer) else { return false }
        let slot = transfer.poolSlot
        let last = transfers.removeLast()
        if slot < transfers.count {
            transfers[slot] = last
            last.poolSlot = slot
        }
        transfer.poolSlot = -1
        transfer.connections = nil
        if transfer.hasConnection { lastConnectedTransferLeft = ActivityClock.now }
        return true
    }

    /// The transfer whose easy handle `easy` is (`CURLOPT_PRIVATE`, set by the transfer's options), while it
    /// is in this pool: the pool holds it, so the pointer is alive.
    private func transfer(of easy: UnsafeMutableRawPointer) -> Transfer? {
        var pointer: UnsafeMutableRawPointer?
        guard herald_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer) == CURLE_OK, let pointer else { return nil }
        let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
        return isInPool(transfer) ? transfer : nil
    }

    // MARK: - curl callbacks

    private func socketChanged(_ easy: UnsafeMutableRawPointer?, _ socket: curl_socket_t, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if let poll = polls.remove(socket) {
                engine.pollHandles.stop(poll, socket: socket)
            }
            if let easy, let transfer = transfer(of: easy) { transfer.socketNoLongerWatched() }
            return
        }
        let poll: UnsafeMutablePointer<uv_poll_t>
        if let existing = polls[socket] {
            poll = existing
        } else {
            guard let taken = engine.pollHandles.take(for: socket, on: engine.uvLoop) else {
                failTransfer(of: easy, socket: socket, reason: "libuv cannot poll it")
                return
            }
            poll = taken.handle
            if taken.opened { pollHandlesOpened += 1 }
            socketsWatched += 1
            poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            // PollHandles.take refuses a negative number, so the socket is one; nothing was held for it.
            _ = polls.insert(poll, for: socket)
        }
        var events: Int32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
        let started = uv_poll_start(poll, events) { poll, status, events in
            guard let poll, let context = poll.pointee.data else { return }
            var socket: uv_os_fd_t = -1
            uv_fileno(UnsafeMutableRawPointer(poll).assumingMemoryBound(to: uv_handle_t.self), &socket)
            var flags: Int32 = 0
            if status < 0 {
                flags = CURL_CSELECT_ERR
            } else {
                if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
                if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            }
            Unmanaged<MultiHandle>.fromOpaque(context).takeUnretainedValue().socketAction(socket, flags: flags)
        }
        if started != 0 {
            failTransfer(of: easy, socket: socket, reason: String(cString: uv_strerror(started)))
        }
    }

    /// Ends the transfer of `easy` with an error when its socket can't be watched: left unwatched, it would
    /// wait for its timeout, or forever without one. curl hands libuv only sockets, and one socket number has
    /// one handle (``PollHandles``), so this is for a socket curl closed without reporting it first. From
    /// inside curl's callback, so through a command: never a `curl_multi_*` call here.
    private func failTransfer(of easy: UnsafeMutableRawPointer?, socket: curl_socket_t, reason: String) {
        guard let easy, let transfer = transfer(of: easy) else { return }
        let error = TransferError(.internal, "Cannot watch socket \(socket): \(reason).", url: transfer.request.url)
        engine.execute { [self] in
            // Only while it is still in the pool: one that finished meanwhile keeps its own outcome.
            if isInPool(transfer) { remove(transfer, error: error) }
        }
    }

    private func socketAction(_ socket: curl_socket_t, flags: Int32) {
        guard !isClosed else { return }
        var running: Int32 = 0
        curl_multi_socket_action(multi, socket, flags, &running)
        processMessages()
    }
}
