import CNetlink
import Foundation
import HeraldNetlink
import HeraldEngine

/// Watches the kernel's routing netlink on an engine's loop: links, addresses and routes, as they change.
///
/// The announcement socket is polled by the loop (no thread, no timer while nothing changes); each time it
/// is readable every queued message is applied to a ``NetworkTable``, then the target's status is computed.
/// A status is reported only once it has held for the debounce delay: each change of the computed status
/// starts the delay again, and a return to the last reported status cancels it — so a link that flaps
/// faster than the delay reports nothing until it settles, and nothing at all if it settles where it began. Waiters (tasks waiting for connectivity) are told as soon as their
/// target is reachable, without the delay.
///
/// Everything but ``init(target:debounce:engine:classify:)`` runs on the engine's loop thread.
final class RoutingMonitor: @unchecked Sendable {
    // Safety: the sockets, the table, the watch, the timer and the waiters are touched only on the engine's
    // loop thread (`start`, `stop`, the poll and timer callbacks, `whenReachable`'s closure); the rest is
    // immutable.

    let engine: Engine
    let target: ReachabilityTarget
    /// How long a changed status must settle before it is reported, in milliseconds.
    let debounce: UInt64
    private let announcements: Int32
    private let query: NetlinkQuery
    private let buffer: UnsafeMutableRawBufferPointer
    private var table: NetworkTable
    private var watch: DescriptorWatch?
    private var timer: LoopTimer?
    private var reported: NetworkReachabilityStatus
    /// The status that differs from `reported` and is holding for the debounce delay; `nil` when none is.
    private var holding: NetworkReachabilityStatus?
    /// Called with each status to report: the first one at ``start(reporting:)``, then each settled change.
    private var report: ((NetworkReachabilityStatus) -> Void)?
    private var waiters: [Waiter] = []
    /// A read of the kernel's tables failed after announcements were lost (or after routes changed): it is
    /// tried again at the next announcement, so the table can't stay stale for want of one.
    private var owesRead: (all: Bool, routes: Bool) = (false, false)

    private struct Waiter {
        var target: ReachabilityTarget
        /// Run on `queue` once the target is reachable; a waiter whose item was cancelled is forgotten.
        var item: DispatchWorkItem
        var queue: DispatchQueue
    }

    /// Opens the sockets and reads the kernel's tables, on the calling thread, so that a refusal is thrown here.
    /// - Throws: ``HeraldError/Code/reachabilityUnavailable`` when the kernel refuses a netlink socket or its
    ///   tables can't be read.
    init(
        target: ReachabilityTarget, debounce: TimeInterval, engine: Engine,
        classify: @escaping @Sendable (NetlinkLink) -> NetworkInterfaceKind = NetworkTable.kind(of:)
    ) throws {
        // Subscribed before the tables are read: a change between the two is then both in the tables and
        // announced, never in neither.
        let announcements = hnl_open(hnl_reachability_groups, 1)
        guard announcements >= 0 else {
            throw NetlinkQuery.error("open a routing netlink socket", code: -announcements)
        }
        do {
            query = try NetlinkQuery()
            table = try query.readTable(classify: classify)
            reported = try query.status(of: target, in: table)
        } catch {
            close(announcements)
            throw error
        }
        self.announcements = announcements
        self.target = target
        self.engine = engine
        self.debounce =
            debounce.isNaN ? 0 : UInt64(min(NetworkReachability.maximumDebounceInterval, max(0, debounce)) * 1000)
        buffer = .allocate(byteCount: NetlinkQuery.bufferSize, alignment: 8)
    }

    deinit {
        close(announcements)
        buffer.deallocate()
    }

    /// The status read when the monitor was made, before ``start(reporting:)``; after, the last reported.
    var initialStatus: NetworkReachabilityStatus { reported }

    /// Starts watching on the loop thread; `report` is called there with each settled change (`nil`: only
    /// waiters are served). Loop thread.
    func start(reporting report: ((NetworkReachabilityStatus) -> Void)?) {
        self.report = report
        timer = LoopTimer(on: engine)
        watch = DescriptorWatch(descriptor: announcements, on: engine) { [unowned self] in readAnnouncements() }
        // The kernel announced nothing yet that the tables read in `init` lack, except changes since: read them.
        readAnnouncements()
    }

    /// Stops watching; nothing is reported after. Loop thread.
    func stop() {
        watch?.stop()
        watch = nil
        timer?.close()
        timer = nil
        report = nil
        waiters = []
    }

    /// Runs `item` on `queue` once `target` is reachable: at once if it is now. Cancelling `item` forgets it
    /// (at the next change). Loop thread.
    func whenReachable(_ target: ReachabilityTarget, run item: DispatchWorkItem, on queue: DispatchQueue) {
        waiters.removeAll { $0.item.isCancelled }
        if (try? query.status(of: target, in: table).isReachable) == true {
            queue.async(execute: item)
        } else {
            waiters.append(Waiter(target: target, item: item, queue: queue))
        }
    }

    /// The number of waiters; for tests. Loop thread.
    var waiterCount: Int { waiters.count }

    private func readAnnouncements() {
        var readRoutes = owesRead.routes
        var readAll = owesRead.all
        while true {
            let received = hnl_receive(announcements, buffer.baseAddress!, buffer.count)
            if received == -Int(EAGAIN) { break }
            if received == -Int(ENOBUFS) || received == -Int(EMSGSIZE) {
                // The kernel dropped announcements (the socket's buffer was full) or one was cut: the tables
                // are read again whole, so nothing is lost.
                readAll = true
                continue
            }
            guard received > 0 else { break }
            for message in NetlinkDecoder.messages(in: UnsafeRawBufferPointer(rebasing: buffer[..<received])) {
                if table.apply(message.event) { readRoutes = true }
            }
        }
        owesRead = (false, false)
        if readAll {
            if let fresh = try? query.readTable(classify: table.classify) {
                table = fresh
            } else {
                owesRead.all = true
            }
        } else if readRoutes {
            do { try query.readRoutes(into: &table) } catch { owesRead.routes = true }
        }
        evaluate()
    }

    private func evaluate() {
        if !waiters.isEmpty {
            var ready: [Waiter] = []
            var reachable: [ReachabilityTarget: Bool] = [:]
            waiters.removeAll { waiter in
                if waiter.item.isCancelled { return true }
                let isReachable =
                    reachable[waiter.target]
                    ?? ((try? query.status(of: waiter.target, in: table).isReachable) ?? false)
                reachable[waiter.target] = isReachable
                if isReachable { ready.append(waiter) }
                return isReachable
            }
            for waiter in ready { waiter.queue.async(execute: waiter.item) }
        }
        guard report != nil, let timer, let status = try? query.status(of: target, in: table) else { return }
        if status == reported {
            // Back where it was: nothing to announce, whatever held meanwhile.
            holding = nil
            timer.stop()
        } else if status != holding {
            // A new status: it must hold for the whole delay from now.
            holding = status
            timer.start(after: debounce) { [unowned self] in settle() }
        }
    }

    /// The status has held for the debounce delay: reports it.
    private func settle() {
        guard let status = holding else { return }
        holding = nil
        reported = status
        report?(status)
    }
}
