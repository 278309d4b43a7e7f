import Foundation
@testable import HeraldTesting
import Testing

@Suite("Fault: redirect loop")
struct RedirectLoopFaultTests {
    @Test("/fault/redirect-loop answers 302 with a Location pointing at itself, and keeps the connection")
    func redirectLoop() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/redirect-loop"), port: server.port)
            #expect(response.statusCode == 302)
            #expect(response.header("Location") == "/fault/redirect-loop")
            #expect(Route.parse(uri: "/fault/redirect-loop").route.isRedirectLoop)
        }
    }
}

extension Route {
    fileprivate var isRedirectLoop: Bool {
        if case .fault(.redirectLoop) = self { return true }
        return false
    }
}
