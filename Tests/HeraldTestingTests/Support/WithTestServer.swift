import HeraldTesting

/// Runs `body` against a fresh server and shuts the server down afterwards, even if `body` throws.
func withTestServer<Value>(_ body: (TestServer) async throws -> Value) async throws -> Value {
    let server = try await TestServer.start()
    do {
        let value = try await body(server)
        try await server.shutdown()
        return value
    } catch {
        try? await server.shutdown()
        throw error
    }
}
