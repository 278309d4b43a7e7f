import Foundation
import HeraldNotifications
import HeraldTesting

@testable import Herald

/// Hand-made lifecycle notifications, for driving an observer directly without a network.
///
/// Their `object` is always `nil`: observers learn the request from the payload alone.
enum Payloads {
    /// What a payload says about a request when a test does not care.
    static let anyRequest = RequestSummary(method: "GET", url: URL(string: "http://127.0.0.1/")!)

    static func resume(
        task: Int, session: Int = 1, request: RequestSummary = anyRequest, date: Date = Date()
    ) -> TypedNotification<TaskLifecycleEvent> {
        TypedNotification(
            name: .taskDidResume, object: nil,
            userInfo: TaskLifecycleEvent(taskIdentifier: task, sessionIdentifier: session, date: date, request: request)
        )
    }

    static func suspend(task: Int, session: Int = 1, request: RequestSummary = anyRequest) -> TypedNotification<
        TaskLifecycleEvent
    > {
        TypedNotification(
            name: .taskDidSuspend, object: nil,
            userInfo: TaskLifecycleEvent(
                taskIdentifier: task, sessionIdentifier: session, date: Date(), request: request))
    }

    static func complete(
        task: Int, session: Int = 1, request: RequestSummary = anyRequest, response: HTTPResponse? = nil,
        error: HeraldError? = nil, metrics: TransferMetrics? = nil, date: Date = Date(),
        source: ResponseSource = .network
    ) -> TypedNotification<TaskCompletion> {
        TypedNotification(
            name: .taskDidComplete, object: nil,
            userInfo: TaskCompletion(
                taskIdentifier: task, sessionIdentifier: session, date: date, request: request,
                responseSerializer: DataResponseSerializer(), responseData: nil, assetPath: nil,
                serializedResponse: nil, error: error, response: response, finalURL: response?.url,
                metrics: metrics, responseSource: source))
    }

    /// A `downloadDidFailToMoveFile` for a download kept at `/tmp/herald/kept.download`, meant for
    /// `/missing/dir/out.bin`.
    static func moveFailure(
        task: Int, session: Int = 1, request: RequestSummary = anyRequest
    ) -> TypedNotification<DownloadMoveFailure> {
        let kept = URL(fileURLWithPath: "/tmp/herald/kept.download")
        return TypedNotification(
            name: .downloadDidFailToMoveFile, object: nil,
            userInfo: DownloadMoveFailure(
                taskIdentifier: task, sessionIdentifier: session, date: Date(), request: request,
                error: HeraldError(.downloadMoveFailed, "No such directory.", keptFileURL: kept), sourceURL: kept,
                destinationURL: URL(fileURLWithPath: "/missing/dir/out.bin")))
    }

    /// A `connectionDidChangeState` for connection `connection` of `session` to `url`'s origin through
    /// 127.0.0.1, with the session's counts after it.
    static func connection(
        _ state: ConnectionState, previous: ConnectionState?, active: Int, idle: Int, url: URL, connection: Int = 1,
        session: Int = 1, peer: String? = "127.0.0.1", age: TimeInterval = 1.5
    ) -> TypedNotification<ConnectionStateChange> {
        let scheme = url.scheme ?? "https"
        return TypedNotification(
            name: .connectionDidChangeState, object: nil,
            userInfo: ConnectionStateChange(
                sessionIdentifier: session, connectionIdentifier: connection, state: state, previousState: previous,
                scheme: scheme, host: url.host ?? "", port: url.port ?? (scheme == "https" ? 443 : 80),
                peerAddress: peer, peerPort: peer == nil ? nil : 8443, protocolVersion: previous == nil ? nil : "2",
                age: age, activeConnections: active, idleConnections: idle, date: Date()))
    }

    static func invalidate(session: Int = 1) -> TypedNotification<SessionInvalidation> {
        TypedNotification(
            name: .sessionDidInvalidate, object: nil,
            userInfo: SessionInvalidation(sessionIdentifier: session, date: Date(), error: nil))
    }

    static func metrics(
        total: TimeInterval = 0.25, sent: Int64 = 0, received: Int64 = 1024, redirects: Int = 0,
        startDate: Date = Date()
    ) -> TransferMetrics {
        TransferMetrics(
            startDate: startDate, nameLookup: 0.001, connect: 0.002, tlsHandshake: 0, timeToFirstByte: 0.01,
            total: total, redirectTime: 0, requestHeaderBytes: 100, requestBodyBytes: sent,
            responseHeaderBytes: 120, responseBodyBytes: received, redirectCount: redirects, connectionReused: false,
            remoteAddress: "127.0.0.1", remotePort: 8080, localPort: 50000, httpVersion: "HTTP/1.1")
    }

    static func response(_ status: Int, url: URL, headers: HTTPHeaders = [:]) -> HTTPResponse {
        HTTPResponse(url: url, statusCode: status, headers: headers)
    }
}

/// A session that never transfers anything, to create real (never resumed) tasks whose request summaries
/// (what Herald puts in every payload) the hand-made notifications carry.
struct OfflineTasks {
    let session = SessionManager(notificationCenter: NotificationHub())

    func task(_ url: String, method: String = "GET", headers: HTTPHeaders = [:]) throws -> DataTask {
        try session.dataTask(with: Request(url: URL(string: url)!, method: method, headers: headers))
    }
}

extension SessionTask {
    /// What Herald puts in every payload about this task's request.
    var summary: RequestSummary { requestSummary }
}
