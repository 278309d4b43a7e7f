import Foundation
import HeraldNotifications
import HeraldTesting

@testable import Herald

/// Hand-made lifecycle notifications, for driving an observer directly without a network.
enum Payloads {
    static func resume(
        task: Int, session: Int = 1, object: SessionTask? = nil, date: Date = Date()
    ) -> TypedNotification<TaskLifecycleEvent> {
        TypedNotification(
            name: .taskDidResume, object: object,
            userInfo: TaskLifecycleEvent(taskIdentifier: task, sessionIdentifier: session, date: date))
    }

    static func suspend(task: Int, session: Int = 1, object: SessionTask? = nil) -> TypedNotification<
        TaskLifecycleEvent
    > {
        TypedNotification(
            name: .taskDidSuspend, object: object,
            userInfo: TaskLifecycleEvent(taskIdentifier: task, sessionIdentifier: session, date: Date()))
    }

    static func complete(
        task: Int, session: Int = 1, object: SessionTask? = nil, response: HTTPResponse? = nil,
        error: HeraldError? = nil, metrics: TransferMetrics? = nil, date: Date = Date()
    ) -> TypedNotification<TaskCompletion> {
        TypedNotification(
            name: .taskDidComplete, object: object,
            userInfo: TaskCompletion(
                taskIdentifier: task, sessionIdentifier: session, date: date,
                responseSerializer: DataResponseSerializer(), responseData: nil, assetPath: nil,
                serializedResponse: nil, error: error, response: response, finalURL: response?.url,
                metrics: metrics))
    }

    static func invalidate(session: Int = 1) -> TypedNotification<SessionInvalidation> {
        TypedNotification(
            name: .sessionDidInvalidate, object: nil,
            userInfo: SessionInvalidation(sessionIdentifier: session, date: Date(), error: nil))
    }

    static func metrics(total: TimeInterval = 0.25, sent: Int64 = 0, received: Int64 = 1024) -> TransferMetrics {
        TransferMetrics(
            startDate: Date(), nameLookup: 0.001, connect: 0.002, tlsHandshake: 0, timeToFirstByte: 0.01,
            total: total, redirectTime: 0, requestHeaderBytes: 100, requestBodyBytes: sent,
            responseHeaderBytes: 120, responseBodyBytes: received, redirectCount: 0, connectionReused: false,
            remoteAddress: "127.0.0.1", remotePort: 8080, localPort: 50000, httpVersion: "HTTP/1.1")
    }

    static func response(_ status: Int, url: URL, headers: HTTPHeaders = [:]) -> HTTPResponse {
        HTTPResponse(url: url, statusCode: status, headers: headers)
    }
}

/// A session that never transfers anything, to create real (never resumed) tasks whose requests the
/// observers read from a notification's `object`.
struct OfflineTasks {
    let session = SessionManager(notificationCenter: NotificationHub())

    func task(_ url: String, method: String = "GET", headers: HTTPHeaders = [:]) throws -> DataTask {
        try session.dataTask(with: Request(url: URL(string: url)!, method: method, headers: headers))
    }
}
