import Foundation
import Herald
import HeraldTesting

/// A ``SessionFixture`` with an ``HTTPSessionManager`` over its session, based at the server's root.
struct HTTPFixture {
    let base: SessionFixture
    let manager: HTTPSessionManager

    var server: TestServer { base.server }
    var recorder: RecordingObserver { base.recorder }
    var session: SessionManager { base.session }

    static func make(
        basePath: String = "/", configuration: SessionConfiguration = .default,
        requestSerializer: any RequestSerializer = FormRequestSerializer()
    ) async throws -> HTTPFixture {
        let base = try await SessionFixture.make(configuration: configuration)
        let manager = HTTPSessionManager(
            baseURL: base.server.url(basePath), session: base.session, requestSerializer: requestSerializer)
        return HTTPFixture(base: base, manager: manager)
    }

    func tearDown() async throws { try await base.tearDown() }
}

extension JSONValue {
    /// Decodes the `/echo` payload this value holds (what the JSON serializer made of it).
    var echoed: EchoedRequest? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return try? JSONDecoder().decode(EchoedRequest.self, from: data)
    }

    /// Decodes the `/multipart` payload this value holds.
    var echoedMultipart: EchoedMultipart? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return try? JSONDecoder().decode(EchoedMultipart.self, from: data)
    }
}

/// The `/echo` payload of an `async` response's object.
func echoed(_ result: (any Sendable, HTTPResponse)) -> EchoedRequest? {
    (result.0 as? JSONValue)?.echoed
}
