import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The observers a run attaches to its session: the activity indicator, the logger, the "waiting for the
/// network" line, and with `--events` the JSON-lines event log on stdout.
struct Observers {
    let eventLog: JSONLinesEventLog?
    let logger: LoggingObserver
    private let tokens: [ObservationToken]
    /// The `errno` of the first `--events` line stdout refused, if any.
    private let eventsError = EventsError()

    /// Why `--events` could not be written (closed or full stdout), or why lines are missing from it (stdout
    /// fell so far behind that the log's queue overflowed), once ``finish(session:)`` returned.
    var eventsFailure: String? {
        if let error = eventsError.errno.withLock({ $0 }) { return String(cString: strerror(error)) }
        if let dropped = eventLog?.droppedLines, dropped > 0 {
            return "\(dropped) lines dropped: stdout fell behind"
        }
        return nil
    }

    /// Attaches the indicator, the logger and, with `--events`, the event log to `session`'s center.
    /// - Parameter stdoutIsClosed: Whether stdout was closed when the run started: `--events` then fails.
    init(session: SessionManager, options: RunOptions, display: ActivityDisplay, stdoutIsClosed: Bool) {
        let center = session.notificationCenter
        let indicator = NetworkActivityIndicator(
            activationDelay: options.activationDelay, completionDelay: options.completionDelay,
            onChange: { change in display.indicatorChanged(change) })
        display.indicator = indicator
        var logger = Logger(label: "activity-counter") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = options.effectiveLogLevel
        self.logger = LoggingObserver(logger: logger)
        let eventsError = self.eventsError
        // Only the event log writes to stdout for a program: without --events a closed stdout is no failure.
        if options.events, stdoutIsClosed { eventsError.errno.withLock { $0 = EBADF } }
        eventLog =
            options.events
            ? JSONLinesEventLog { line in
                // After a failed write the log has ended: later lines are dropped, the first error kept.
                guard eventsError.errno.withLock({ $0 == nil }) else { return }
                if let error = StandardStream.write(line, to: STDOUT_FILENO) {
                    eventsError.errno.withLock { $0 = error }
                }
            } : nil
        var tokens = [indicator.observe(center), self.logger.observe(center)]
        // With --wait-for-network, a transfer that finds no route waits for one: say so instead of staying silent.
        tokens.append(
            center.addObserver(for: .taskIsWaitingForConnectivity) { note in
                display.waitingForNetwork(because: note.userInfo.error)
            })
        if let eventLog { tokens.append(eventLog.observe(center)) }
        self.tokens = tokens
    }

    /// Ends the session (every download has completed or been cancelled by now) and returns once every event,
    /// the session's invalidation last, has reached the observers and been written.
    func finish(session: SessionManager) async {
        // Drained shutdown: returns once sessionDidInvalidate has reached every observer, so every
        // taskDidComplete before it has too.
        await session.invalidateAndWait(cancelingTasks: true)
        // The sinks write on threads of their own: wait until every line they were handed is out.
        await eventLog?.flush()
        await logger.flush()
        tokens.forEach { $0.cancel() }
    }
}

/// The `errno` of the first `--events` line that could not be written, shared with the log's writing thread.
private final class EventsError: Sendable {
    let errno = Mutex<Int32?>(nil)
}
