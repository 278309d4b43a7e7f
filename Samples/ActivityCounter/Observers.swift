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
    private let invalidated: AsyncStream<Void>

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
        // Registered last, so `.posting` delivery reaches it after every observer above has had the invalidation.
        let (invalidated, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingOldest(1))
        tokens.append(center.addObserver(for: .sessionDidInvalidate, object: session) { _ in continuation.yield() })
        self.invalidated = invalidated
        self.tokens = tokens
    }

    /// Ends the session (every download has completed or been cancelled by now) and returns once every event,
    /// the session's invalidation last, has reached the observers and been written.
    func finish(session: SessionManager) async {
        // Drained shutdown, interim: every observer here uses `.posting` delivery and the event log writes each
        // line synchronously as it is delivered, so the invalidation reaching the observer registered last means
        // every line has been written.
        session.invalidate(cancelingTasks: true)
        for await _ in invalidated { break }
        tokens.forEach { $0.cancel() }
    }
}
