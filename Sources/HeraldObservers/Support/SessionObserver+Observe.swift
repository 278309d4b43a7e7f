import Herald
import HeraldNotifications

extension SessionObserver {
    /// Starts observing every Herald lifecycle notification posted on `center`.
    ///
    /// The same as `center.addObserver(self, delivery: delivery)`, spelled from the observer's side.
    /// - Parameters:
    ///   - center: The center to observe, usually a session's `SessionManager.notificationCenter`.
    ///   - delivery: `.posting` (default: synchronously on the posting session's event queue) or `.queue`.
    /// - Returns: A token; keep it for as long as the observer should run, cancel or release it to stop.
    public func observe(_ center: NotificationHub, delivery: NotificationDelivery = .posting) -> ObservationToken {
        center.addObserver(self, delivery: delivery)
    }
}
