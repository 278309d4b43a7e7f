import Foundation
@testable import Herald
@testable import HeraldEngine
import HeraldNotifications
import HeraldTesting
import Testing

/// A loopback server, a private notification center, a recorder on it and a session posting to it.
struct SessionFixture {
    let server: TestServer
    let center: NotificationHub
    let recorder: RecordingObserver
    let session: SessionManager

    /// With `ownEngine`, the session runs on an engine (a loop thread) of its own, for a test that holds its loop
    /// thread: the shared one runs every other suite's transfers meanwhile.
    static func make(
        configuration: SessionConfiguration = .default, serializer: (any ResponseSerializer)? = nil,
        ownEngine: Bool = false
    ) async throws -> SessionFixture {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let session = SessionManager(
            configuration: configuration, notificationCenter: center, completionQueue: nil, completionGroup: nil,
            engine: ownEngine ? Engine(name: "herald.engine.fixture") : .shared)
        if let serializer { session.responseSerializer = serializer }
        return SessionFixture(server: server, center: center, recorder: recorder, session: session)
    }

    func tearDown() async throws {
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}

/// Collects completion-handler calls so a test can assert there was exactly one.
final class CompletionLog: Sendable {
    struct Call: Sendable {
        let response: HTTPResponse?
        let object: (any Sendable)?
        let error: HeraldError?
        /// The value of ``CompletionLog/queueKey`` on the queue the handler ran on.
        let queueMarker: String?
    }

    /// Set on a queue with `setSpecific` to check which queue a handler ran on.
    static let queueKey = DispatchSpecificKey<String>()

    private let calls = Locked<[Call]>([])

    var all: [Call] { calls.withLock { $0 } }

    var handler: TaskCompletionHandler {
        { response, object, error in
            let marker = DispatchQueue.getSpecific(key: CompletionLog.queueKey)
            self.calls.withLock {
                $0.append(Call(response: response, object: object, error: error, queueMarker: marker))
            }
        }
    }
}
