import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Logging

/// The observers a run attaches to its session: the activity indicator, the logger, and with `--events` the
/// JSON-lines event log on stdout.
struct Observers {
    let eventLog: JSONLinesEventLog?
    let logger: LoggingObserver
    private let tokens: [ObservationToken]

    init(session: SessionManager, options: RunOptions, display: ActivityDisplay) {
        let center = session.notificationCenter
        let indicator = NetworkActivityIndicator(
            activationDelay: options.activationDelay, completionDelay: options.completionDelay,
            onChange: { change in display.indicatorChanged(change) })
        display.indicator = indicator
        var logger = Logger(label: "activity-counter") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = options.effectiveLogLevel
        self.logger = LoggingObserver(logger: logger)
        eventLog = options.events ? JSONLinesEventLog(fileHandle: .standardOutput) : nil
        var tokens = [indicator.observe(center), self.logger.observe(center)]
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
