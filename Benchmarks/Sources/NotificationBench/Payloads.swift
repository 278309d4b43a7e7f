import Foundation
import HeraldNotifications

/// A payload shaped like Herald's lifecycle payloads: five fields of mixed types.
struct FivePayload: Sendable {
    var taskIdentifier: Int
    var sessionIdentifier: Int
    var bytesSent: Int64
    var bytesReceived: Int64
    var method: String
}

extension NotificationName where UserInfo == Int {
    static let benchOne = NotificationName("bench.one")
    static let benchFiltered = NotificationName("bench.filtered")
    static let benchMany = NotificationName("bench.many")
    static let benchNobody = NotificationName("bench.nobody")
    static let benchQueue = NotificationName("bench.queue")
}

extension NotificationName where UserInfo == FivePayload {
    static let benchFive = NotificationName("bench.five")
}

extension Notification.Name {
    static let benchOne = Notification.Name("bench.one")
    static let benchFiltered = Notification.Name("bench.filtered")
    static let benchMany = Notification.Name("bench.many")
    static let benchNobody = Notification.Name("bench.nobody")
    static let benchFive = Notification.Name("bench.five")
    static let benchQueue = Notification.Name("bench.queue")
}

/// A sender for filtered observations.
final class BenchSender: NSObject, Sendable {}
