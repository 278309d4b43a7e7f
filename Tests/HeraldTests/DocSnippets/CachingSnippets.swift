import Foundation
import Herald
import HeraldTesting
import Testing

/// The snippet of the DocC article "Caching responses": a session over a disk cache in a folder of its own.
@Suite("Caching.md snippets")
struct CachingSnippets {
    @Test("a session with a DiskResponseCache answers a fresh response from the folder")
    func diskCache() async throws {
        let cacheFolder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-snippet-\(UUID())")
        defer { try? FileManager.default.removeItem(at: cacheFolder) }
        let server = try await TestServer.start()
        var configuration = SessionConfiguration()
        configuration.responseCache = try DiskResponseCache(directory: cacheFolder, capacity: 100 << 20)
        let session = SessionManager(configuration: configuration)
        let request = Request(url: server.url("/headers?Cache-Control=max-age%3D60"))
        _ = try await session.data(for: request)
        _ = try await session.data(for: request)
        #expect(server.requestCount == 1)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
