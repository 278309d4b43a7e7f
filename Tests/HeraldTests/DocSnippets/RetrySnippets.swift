import Foundation
import Herald
import HeraldTesting
import Testing

// The token store and the adapter, as the article shows them.
actor TokenStore {
    var current: String

    init(current: String) {
        self.current = current
    }
}

struct BearerTokenAdapter: RequestAdapter {
    let tokens: TokenStore

    func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
        var request = request
        request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(await tokens.current)")
        return request
    }
}

/// The snippets of the DocC article "Adapting and retrying requests", run against a flaky loopback server.
@Suite("RetryingRequests.md snippets")
struct RetrySnippets {
    @Test("the bearer adapter and the retry policy: a server failing twice is answered on the third attempt")
    func adapterAndPolicy() async throws {
        let server = try await TestServer.start()
        let tokens = TokenStore(current: "first-token")
        let session = SessionManager()
        session.interceptor = Interceptor(
            adapters: [BearerTokenAdapter(tokens: tokens)],
            retriers: [RetryPolicy(retryLimit: 3)])

        defer { session.invalidate(cancelingTasks: true) }
        let (_, response) = try await session.data(for: Request(url: server.url("/flaky?key=doc&fail=2")))
        #expect(response.statusCode == 200)
        let sent = server.requests(forPath: "/flaky").map { $0.headerValue("Authorization") }
        #expect(sent == Array(repeating: "Bearer first-token", count: 3))
        try await server.shutdown()
    }
}
