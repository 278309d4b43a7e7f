import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// The response cache under a burst of identical requests, and a disk cache that can't write.
@Suite("Response cache under load and faults")
struct ResponseCacheLoadAndFaultTests {
    private static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-cache-faults-\(UUID().uuidString)")
    }

    private static func bodyFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("bodies").path)) ?? [])
            .sorted()
    }

    private static let burst = 64

    /// Resumes `burst` tasks for one cacheable URL at once against a cold `cache`, then asks again: returns
    /// the burst's and the later requests' completions, and how many requests reached the server meanwhile.
    private static func runBurst(
        cache: any ResponseCache, server: TestServer
    ) async throws -> (burst: [TaskCompletion], later: [TaskCompletion], requestsAfterBurst: Int) {
        let center = NotificationHub()
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        let session = SessionManager(configuration: configuration, notificationCenter: center)
        let recorder = RecordingObserver(center: center)
        let request = Request(url: server.url("/headers?Cache-Control=max-age%3D600&X-Burst=1"))
        let tasks = try (0..<burst).map { _ in try session.dataTask(with: request) }
        for task in tasks { task.resume() }
        // Stores happen before the completion is posted: once all are seen, every store is done.
        let burstCompletions = try await recorder.waitForCompletions(burst).compactMap(\.completion)
        let requestsAfterBurst = server.requestCount
        for _ in 0..<4 { _ = try await session.data(for: request) }
        let all = try await recorder.waitForCompletions(burst + 4).compactMap(\.completion)
        await session.invalidateAndWait(cancelingTasks: true)
        let burstIDs = Set(burstCompletions.map(\.taskIdentifier))
        return (burstCompletions, all.filter { !burstIDs.contains($0.taskIdentifier) }, requestsAfterBurst)
    }

    @Test("64 tasks at once on one cold URL keep one in-memory entry, which answers later requests")
    func burstInMemory() async throws {
        let server = try await TestServer.start()
        let cache = InMemoryResponseCache()
        let (burst, later, requests) = try await Self.runBurst(cache: cache, server: server)
        #expect(burst.count == Self.burst)
        #expect(burst.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
        #expect(burst.contains { $0.responseSource == .network })
        #expect(cache.count == 1)
        #expect(later.count == 4)
        #expect(later.allSatisfy { $0.responseSource == .cache && $0.error == nil })
        #expect(server.requestCount == requests)
        try await server.shutdown()
    }

    @Test("64 tasks at once on one cold URL keep one disk entry and one body file, which answer later requests")
    func burstOnDisk() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start()
        let cache = try DiskResponseCache(directory: folder)
        let (burst, later, requests) = try await Self.runBurst(cache: cache, server: server)
        #expect(burst.count == Self.burst)
        #expect(burst.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
        #expect(burst.contains { $0.responseSource == .network })
        #expect(cache.count == 1)
        #expect(Self.bodyFiles(in: folder).count == 1)
        #expect(later.count == 4)
        #expect(later.allSatisfy { $0.responseSource == .cache && $0.error == nil })
        #expect(server.requestCount == requests)
        // A new cache over the folder finds the one entry whole.
        let reopened = try DiskResponseCache(directory: folder)
        #expect(reopened.count == 1)
        #expect(Self.bodyFiles(in: folder).count == 1)
        try await server.shutdown()
    }

    /// Fetches `url` twice through a session over `cache`, returning both bodies and sources.
    private static func fetchTwice(
        _ url: URL, cache: DiskResponseCache
    ) async throws -> [(body: Data, source: ResponseSource)] {
        let center = NotificationHub()
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        let session = SessionManager(configuration: configuration, notificationCenter: center)
        let recorder = RecordingObserver(center: center)
        var bodies: [Data] = []
        for _ in 0..<2 { bodies.append(try await session.data(for: Request(url: url)).0) }
        let completions = try await recorder.waitForCompletions(2).compactMap(\.completion)
            .sorted { $0.taskIdentifier < $1.taskIdentifier }
        await session.invalidateAndWait(cancelingTasks: true)
        return zip(bodies, completions).map { ($0, $1.responseSource) }
    }

    @Test("a body write that fails: both transfers succeed from the network, nothing is stored or left behind")
    func bodyWriteFails() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start()
        let cache = try DiskResponseCache(directory: folder)
        cache.simulatedWriteError.withLock { $0 = ENOSPC }
        let url = server.url("/headers?Cache-Control=max-age%3D600&X-Fault=write")
        let results = try await Self.fetchTwice(url, cache: cache)
        #expect(results.map(\.source) == [.network, .network])
        #expect(results.allSatisfy { !$0.body.isEmpty } && results[0].body == results[1].body)
        #expect(server.requestCount == 2)
        #expect(cache.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)

        // Once writes work again, the same cache stores and serves.
        cache.simulatedWriteError.withLock { $0 = nil }
        let recovered = try await Self.fetchTwice(url, cache: cache)
        #expect(recovered.map(\.source) == [.network, .cache])
        #expect(cache.count == 1)
        try await server.shutdown()
    }

    @Test("the bodies folder removed after opening: transfers succeed uncached, and the cache doesn't recreate it")
    func bodiesFolderGone() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start()
        let cache = try DiskResponseCache(directory: folder)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("bodies"))
        let results = try await Self.fetchTwice(
            server.url("/headers?Cache-Control=max-age%3D600&X-Fault=folder"), cache: cache)
        #expect(results.map(\.source) == [.network, .network])
        #expect(results.allSatisfy { !$0.body.isEmpty })
        #expect(server.requestCount == 2)
        #expect(cache.count == 0)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("bodies").path))
        try await server.shutdown()
    }

    @Test("the folder made read-only after opening: transfers succeed; uncached unless the user bypasses modes")
    func folderReadOnly() async throws {
        let folder = Self.folder()
        defer {
            chmod(folder.appendingPathComponent("bodies").path, 0o700)
            try? FileManager.default.removeItem(at: folder)
        }
        let server = try await TestServer.start()
        let cache = try DiskResponseCache(directory: folder)
        #expect(chmod(folder.appendingPathComponent("bodies").path, 0o500) == 0)
        let results = try await Self.fetchTwice(
            server.url("/headers?Cache-Control=max-age%3D600&X-Fault=read-only"), cache: cache)
        #expect(results.allSatisfy { !$0.body.isEmpty })
        #expect(results[0].source == .network)
        if geteuid() != 0 {
            // Root writes through a read-only mode; everyone else can't, and so nothing is stored.
            #expect(results[1].source == .network)
            #expect(server.requestCount == 2)
            #expect(cache.count == 0)
        }
        try await server.shutdown()
    }
}
