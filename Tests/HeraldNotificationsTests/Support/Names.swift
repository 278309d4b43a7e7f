import HeraldNotifications

/// A payload shaped like Herald's lifecycle payloads.
struct Progress5: Sendable, Equatable {
    var taskID: Int
    var sessionID: Int
    var bytesSent: Int64
    var bytesReceived: Int64
    var label: String
}

struct Step: Sendable, Equatable {
    var poster: Int
    var sequence: Int
}
