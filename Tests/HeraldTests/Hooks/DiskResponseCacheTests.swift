import Foundation
@testable import Herald
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Disk response cache")
struct DiskResponseCacheTests {
    /// A fresh folder path under the process's temporary directory (not made: the cache makes it).
    private static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-disk-cache-\(UUID().uuidString)")
    }

    private static func entry(_ body: String, url: URL, headers: HTTPHeaders = ["Cache-Control": "max-age=60"])
        -> CachedResponse
    {
        CachedResponse(
            response: HTTPResponse(url: url, statusCode: 200, headers: headers), data: Data(body.utf8),
            storageDate: Date(timeIntervalSince1970: 1_800_000_000), varyingRequestHeaders: ["Accept-Language": "en"])
    }

    private static func bodyFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("bodies").path)) ?? [])
            .sorted()
    }

    @Test("an entry survives a new cache over the same folder, head, body and Vary fields alike; the folder is 0700")
    func roundTrip() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let request = Request(url: URL(fileURLWithPath: "/").appendingPathComponent("x"))
        let stored = Self.entry("hello", url: request.url)
        do {
            let cache = try DiskResponseCache(directory: folder)
            cache.storeCachedResponse(stored, for: request)
            #expect(cache.count == 1)
        }
        let reopened = try DiskResponseCache(directory: folder)
        #expect(reopened.cachedResponse(for: request) == stored)
        var status = stat()
        #expect(lstat(folder.path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
        reopened.removeCachedResponse(for: request)
        #expect(reopened.cachedResponse(for: request) == nil)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test(
        "an index that fails: a read misses and is not remembered as absence; a failed store or removal serves no older entry"
    )
    func indexFailures() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder)
        // Nothing is sent anywhere: the cache is used directly.
        let url = try #require(URL(string: "http://127.0.0.1/index-failure"))
        let request = Request(url: url)
        cache.storeCachedResponse(Self.entry("v1", url: url), for: request)

        // A read that fails misses, and the key is not taken as absent: once the index works, the entry is there
        // and a removal finds it.
        cache.simulateIndexFailure(true)
        #expect(cache.cachedResponse(for: request) == nil)
        cache.simulateIndexFailure(false)
        #expect(cache.cachedResponse(for: request)?.data == Data("v1".utf8))
        cache.simulateIndexFailure(true)
        #expect(cache.cachedResponse(for: request) == nil)
        cache.simulateIndexFailure(false)
        cache.removeCachedResponse(for: request)
        #expect(cache.count == 0)

        // A store that fails leaves the older entry in the index, and it is not served; nor after a removal that
        // fails. A removal that commits ends that, and a store serves again.
        cache.storeCachedResponse(Self.entry("v1", url: url), for: request)
        cache.simulateIndexFailure(true)
        cache.storeCachedResponse(Self.entry("v2", url: url), for: request)
        cache.removeCachedResponse(for: request)
        cache.simulateIndexFailure(false)
        #expect(cache.count == 1)
        #expect(Self.bodyFiles(in: folder).count == 1)
        #expect(cache.cachedResponse(for: request) == nil)
        cache.removeCachedResponse(for: request)
        #expect(cache.count == 0 && Self.bodyFiles(in: folder).isEmpty)
        cache.storeCachedResponse(Self.entry("v3", url: url), for: request)
        #expect(cache.cachedResponse(for: request)?.data == Data("v3".utf8))
    }

    @Test(
        "an index that fails for many requests: past the keys tracked nothing is served, then every entry is removed first"
    )
    func indexFailuresPastTheTrackedKeys() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder)
        // Nothing is sent anywhere: the cache is used directly.
        let base = try #require(URL(string: "http://127.0.0.1/tracked"))
        let kept = Request(url: base.appendingPathComponent("kept"))
        let stale = Request(url: base.appendingPathComponent("stale"))
        cache.storeCachedResponse(Self.entry("kept", url: kept.url), for: kept)
        cache.storeCachedResponse(Self.entry("stale", url: stale.url), for: stale)

        cache.simulateIndexFailure(true)
        // The removal that should have taken the stale entry fails: it is not served.
        cache.removeCachedResponse(for: stale)
        for index in 0..<DiskResponseCache.unservableLimit {
            cache.removeCachedResponse(for: Request(url: base.appendingPathComponent("other-\(index)")))
        }
        cache.simulateIndexFailure(false)
        // One key too many: the cache no longer knows which failed, so it serves no entry, the kept one
        // included, though the index holds both.
        #expect(cache.count == 2)
        #expect(cache.cachedResponse(for: stale) == nil)
        #expect(cache.cachedResponse(for: kept) == nil)

        // The next store removes every entry before it commits its own.
        let next = Request(url: base.appendingPathComponent("next"))
        cache.storeCachedResponse(Self.entry("next", url: next.url), for: next)
        #expect(cache.count == 1)
        #expect(Self.bodyFiles(in: folder).count == 1)
        #expect(cache.cachedResponse(for: next)?.data == Data("next".utf8))
        #expect(cache.cachedResponse(for: stale) == nil)
        cache.storeCachedResponse(Self.entry("kept again", url: kept.url), for: kept)
        #expect(cache.cachedResponse(for: kept)?.data == Data("kept again".utf8))
    }

    @Test("past the capacity, the least recently used entries are evicted, with their body files")
    func leastRecentlyUsedEviction() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = URL(fileURLWithPath: "/")
        let requests = (0..<3).map { Request(url: url.appendingPathComponent("\($0)")) }
        // One entry's size (body and head), measured by a cache of its own: room for two, not three.
        let probeFolder = Self.folder()
        defer { try? FileManager.default.removeItem(at: probeFolder) }
        let probe = try DiskResponseCache(directory: probeFolder)
        probe.storeCachedResponse(
            Self.entry(String(repeating: "a", count: 1000), url: requests[0].url), for: requests[0])
        let cache = try DiskResponseCache(directory: folder, capacity: 2 * probe.currentSize + 10)
        cache.storeCachedResponse(
            Self.entry(String(repeating: "a", count: 1000), url: requests[0].url), for: requests[0])
        cache.storeCachedResponse(
            Self.entry(String(repeating: "b", count: 1000), url: requests[1].url), for: requests[1])
        #expect(cache.cachedResponse(for: requests[0]) != nil)  // 0 is now more recent than 1
        cache.storeCachedResponse(
            Self.entry(String(repeating: "c", count: 1000), url: requests[2].url), for: requests[2])
        #expect(cache.cachedResponse(for: requests[1]) == nil)
        #expect(cache.cachedResponse(for: requests[0]) != nil)
        #expect(cache.cachedResponse(for: requests[2]) != nil)
        #expect(cache.count == 2)
        #expect(cache.currentSize <= cache.capacity)
        #expect(Self.bodyFiles(in: folder).count == 2)
        cache.removeAllCachedResponses()
        #expect(cache.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test("a folder whose parents are missing is made with them, each private")
    func missingParents() throws {
        let top = Self.folder()
        defer { try? FileManager.default.removeItem(at: top) }
        let folder = top.appendingPathComponent("my-app").appendingPathComponent("http")
        // Before, only the last folder was made, and a fresh install's missing parent failed the cache.
        let cache = try DiskResponseCache(directory: folder)
        let request = Request(url: URL(fileURLWithPath: "/parents"))
        cache.storeCachedResponse(Self.entry("made", url: request.url), for: request)
        #expect(cache.count == 1)
        for made in [top, top.appendingPathComponent("my-app"), folder] {
            var status = stat()
            #expect(lstat(made.path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700, "\(made.path)")
        }
        // A parent that is a file is no folder to make one in: a clear error, not a crash.
        let file = Self.folder()
        defer { unlink(file.path) }
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        let refused = #expect(throws: HeraldError.self) {
            try DiskResponseCache(directory: file.appendingPathComponent("a").appendingPathComponent("b"))
        }
        #expect(refused?.code == .fileIO)
    }

    @Test("a folder others can enter, or a symlink, is refused with a fileIO error")
    func folderChecks() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(mkdir(folder.path, 0o755) == 0)
        chmod(folder.path, 0o755)
        #expect(throws: HeraldError.self) { try DiskResponseCache(directory: folder) }
        do {
            _ = try DiskResponseCache(directory: folder)
        } catch {
            #expect(error.code == .fileIO)
        }
        chmod(folder.path, 0o700)
        let link = Self.folder()
        defer { unlink(link.path) }
        #expect(symlink(folder.path, link.path) == 0)
        #expect(throws: HeraldError.self) { try DiskResponseCache(directory: link) }
        #expect(throws: Never.self) { try DiskResponseCache(directory: folder) }
    }

    @Test("what a killed store leaves (a temporary body, an unnamed body) is removed; a damaged body is not served")
    func leftoversAndDamage() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let request = Request(url: URL(fileURLWithPath: "/damaged"))
        do {
            let cache = try DiskResponseCache(directory: folder)
            cache.storeCachedResponse(Self.entry("0123456789", url: request.url), for: request)
        }
        let bodies = folder.appendingPathComponent("bodies")
        let named = try #require(Self.bodyFiles(in: folder).first)
        #expect(
            FileManager.default.createFile(
                atPath: bodies.appendingPathComponent(".tmp-partial").path, contents: Data("01".utf8)))
        #expect(FileManager.default.createFile(atPath: bodies.appendingPathComponent("unnamed").path, contents: Data()))
        let reopened = try DiskResponseCache(directory: folder)
        #expect(Self.bodyFiles(in: folder) == [named])
        // The body cut short behind the index's back: dropped, never served.
        #expect(truncate(bodies.appendingPathComponent(named).path, 4) == 0)
        #expect(reopened.cachedResponse(for: request) == nil)
        #expect(reopened.count == 0)
        // A body file a damaged file system says is a terabyte long (a sparse file here): before, its size was
        // allocated to read it before it was compared with the index's, and the process died.
        let huge = Request(url: URL(fileURLWithPath: "/huge"))
        reopened.storeCachedResponse(Self.entry("0123456789", url: huge.url), for: huge)
        let hugeBody = try #require(Self.bodyFiles(in: folder).first)
        #expect(truncate(bodies.appendingPathComponent(hugeBody).path, 1 << 40) == 0)
        #expect(reopened.cachedResponse(for: huge) == nil)
        #expect(reopened.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test("the size the entries take is kept as they are stored, replaced and removed, and found for an older index")
    func runningTotal() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        func request(_ index: Int) -> Request { Request(url: URL(fileURLWithPath: "/total/\(index)")) }
        var sizes: [Int] = []
        do {
            let cache = try DiskResponseCache(directory: folder)
            for index in 0..<5 {
                let before = cache.currentSize
                cache.storeCachedResponse(
                    Self.entry(String(repeating: "x", count: 100 * (index + 1)), url: request(index).url),
                    for: request(index))
                sizes.append(cache.currentSize - before)
            }
            #expect(sizes == sizes.sorted() && Set(sizes).count == 5)
            #expect(cache.currentSize == sizes.reduce(0, +))
            // Replaced by one of another size, and removed.
            cache.storeCachedResponse(Self.entry("y", url: request(4).url), for: request(4))
            let replaced = cache.currentSize - sizes[0..<4].reduce(0, +)
            #expect(replaced > 0 && replaced < sizes[4])
            cache.removeCachedResponse(for: request(0))
            #expect(cache.currentSize == sizes[1..<4].reduce(0, +) + replaced)
        }
        // An index written before the total was kept: its size is summed when a cache opens it.
        let expected = try DiskResponseCache(directory: folder).currentSize
        CacheIndexEditing.run(
            in: folder,
            "DROP TRIGGER entries_replacing; DROP TRIGGER entries_added; DROP TRIGGER entries_removed; "
                + "DROP TRIGGER entries_resized; DROP TABLE totals")
        let reopened = try DiskResponseCache(directory: folder)
        #expect(reopened.currentSize == expected)
        reopened.removeCachedResponse(for: request(1))
        #expect(reopened.currentSize == expected - sizes[1])
    }

    @Test("a body that can't be read for now is a miss, and its entry stays for the next lookup")
    func unreadableBodyStays() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let request = Request(url: URL(fileURLWithPath: "/unreadable"))
        let cache = try DiskResponseCache(directory: folder)
        cache.storeCachedResponse(Self.entry("0123456789", url: request.url), for: request)
        let body = folder.appendingPathComponent("bodies").appendingPathComponent(
            try #require(Self.bodyFiles(in: folder).first))
        let saved = try Data(contentsOf: body)
        // Something in its place that opens but doesn't read as a file (root reads any file, whatever its mode).
        try FileManager.default.removeItem(at: body)
        try FileManager.default.createDirectory(at: body, withIntermediateDirectories: false)
        #expect(cache.cachedResponse(for: request) == nil)
        // Before, any failure to read dropped the entry for good.
        #expect(cache.count == 1)
        try FileManager.default.removeItem(at: body)
        try saved.write(to: body)
        #expect(cache.cachedResponse(for: request)?.data == Data("0123456789".utf8))
    }

    @Test(
        "a new session over the same folder answers a fresh URL without a request and revalidates a stale one with 304")
    func restart() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start()
        let fresh = Request(url: server.url("/headers?Cache-Control=max-age%3D600&X-Kind=fresh"))
        let stale = Request(url: server.url("/headers?Cache-Control=max-age%3D0&ETag=%22v1%22&X-Kind=stale"))

        func session() throws -> SessionManager {
            var configuration = SessionConfiguration()
            configuration.responseCache = try DiskResponseCache(directory: folder)
            return SessionManager(configuration: configuration)
        }
        let first = try session()
        let (freshBody, _) = try await first.data(for: fresh)
        let (staleBody, _) = try await first.data(for: stale)
        first.invalidate(cancelingTasks: true)
        #expect(server.requestCount == 2)

        let second = try session()
        let (freshAgain, freshResponse) = try await second.data(for: fresh)
        #expect(server.requestCount == 2)
        #expect(freshAgain == freshBody)
        #expect(freshResponse.headers["X-Kind"] == "fresh")
        let (staleAgain, staleResponse) = try await second.data(for: stale)
        #expect(server.requestCount == 3)
        let revalidation = try #require(server.requests.last)
        #expect(revalidation.headers.contains { $0.name.lowercased() == "if-none-match" && $0.value == "\"v1\"" })
        #expect(revalidation.responseStatus == 304)
        #expect(staleResponse.statusCode == 200)
        #expect(staleAgain == staleBody)
        second.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }

    // MARK: - keys known to be absent

    @Test("a key found absent costs no index statement on later lookups and removals, until a store of it")
    func absentKeySkipsTheIndex() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder)
        let request = Request(url: URL(fileURLWithPath: "/").appendingPathComponent("absent"))
        #expect(cache.cachedResponse(for: request) == nil)
        let afterMiss = cache.indexActivity()
        for _ in 0..<10 {
            #expect(cache.cachedResponse(for: request) == nil)
            cache.removeCachedResponse(for: request)
        }
        let afterRepeats = cache.indexActivity()
        #expect(afterRepeats.statements == afterMiss.statements)
        #expect(afterRepeats.skippedReads == afterMiss.skippedReads + 20)

        // A store of the key makes it present again: the next lookup reads the index and finds it.
        let stored = Self.entry("present", url: request.url)
        cache.storeCachedResponse(stored, for: request)
        #expect(cache.cachedResponse(for: request) == stored)
        // A removal that finds the entry deletes it; the key is then absent again, without a statement.
        cache.removeCachedResponse(for: request)
        let afterRemoval = cache.indexActivity()
        #expect(cache.cachedResponse(for: request) == nil)
        #expect(cache.indexActivity().statements == afterRemoval.statements)
        #expect(cache.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test(
        "two caches on one folder: a key one found absent is served once the other stores it, and its removals still remove"
    )
    func absentKeyAcrossCaches() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try DiskResponseCache(directory: folder)
        let second = try DiskResponseCache(directory: folder)
        let request = Request(url: URL(fileURLWithPath: "/").appendingPathComponent("shared"))

        // The first finds the key absent, and takes it as absent from then on.
        #expect(first.cachedResponse(for: request) == nil)
        first.removeCachedResponse(for: request)
        let skipped = first.indexActivity().skippedReads
        #expect(skipped >= 1)

        // The second stores it: the first's next lookup reads the index again and serves it.
        let stored = Self.entry("from the second", url: request.url)
        second.storeCachedResponse(stored, for: request)
        #expect(first.cachedResponse(for: request) == stored)

        // The first finds it absent again after removing it; the second stores it anew; a removal the first
        // asks for (as an uncacheable response would) removes what the second stored.
        first.removeCachedResponse(for: request)
        #expect(first.cachedResponse(for: request) == nil)
        #expect(first.indexActivity().skippedReads > skipped)
        second.storeCachedResponse(Self.entry("stored again", url: request.url), for: request)
        first.removeCachedResponse(for: request)
        #expect(second.cachedResponse(for: request) == nil)
        #expect(first.cachedResponse(for: request) == nil)
        #expect(first.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test("a damaged index is started again empty when the cache opens the folder alone, and its bodies go")
    func damagedIndexStartsAgain() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let request = Request(url: URL(fileURLWithPath: "/").appendingPathComponent("damaged"))
        do {
            let cache = try DiskResponseCache(directory: folder)
            cache.storeCachedResponse(Self.entry("kept", url: request.url), for: request)
            #expect(cache.count == 1)
        }
        #expect(Self.bodyFiles(in: folder).count == 1)
        // What a copy of the folder without its write-ahead log, or a bad block, can leave: not a database.
        let index = folder.appendingPathComponent("index.sqlite")
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131) }).write(to: index)
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("index.sqlite-wal"))
        let reopened = try DiskResponseCache(directory: folder)
        #expect(reopened.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
        reopened.storeCachedResponse(Self.entry("new", url: request.url), for: request)
        #expect(reopened.cachedResponse(for: request)?.data == Data("new".utf8))
    }

    @Test("an index damaged past the pages an open reads is started again too: eviction keeps working")
    func indexDamagedInsideStartsAgain() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = URL(fileURLWithPath: "/damaged-inside")
        let padding = String(repeating: "h", count: 600)
        do {
            let cache = try DiskResponseCache(directory: folder)
            for number in 0..<400 {
                let request = Request(url: url.appendingPathComponent("\(number)"))
                cache.storeCachedResponse(
                    Self.entry("body \(number)", url: request.url, headers: ["X-Padding": padding]), for: request)
            }
            #expect(cache.count == 400)
        }
        let index = folder.appendingPathComponent("index.sqlite")
        let handle = try FileHandle(forUpdating: index)
        let pages = try handle.seekToEnd() / 4096
        try #require(pages > 40, "the index has \(pages) pages")
        // A bad block in the middle of the table: the first page, the schema and most lookups still read.
        try handle.seek(toOffset: (pages / 2) * 4096)
        handle.write(Data(repeating: 0xFF, count: 4096))
        try handle.close()
        let capacity = 4096
        let reopened = try DiskResponseCache(directory: folder, capacity: capacity)
        #expect(reopened.count == 0)
        #expect(reopened.indexIntegrity() == ["ok"])
        #expect(Self.bodyFiles(in: folder).count == 0)
        for number in 0..<20 {
            let request = Request(url: url.appendingPathComponent("new-\(number)"))
            reopened.storeCachedResponse(
                Self.entry(String(repeating: "b", count: 1000), url: request.url), for: request)
        }
        #expect(reopened.count > 0)
        #expect(reopened.currentSize <= capacity)
        #expect(Self.bodyFiles(in: folder).count == reopened.count)
    }

    @Test("a cache that can't map the store counts from its lock file is not made: its stores would go uncounted")
    func unmappableCountsRefused() throws {
        let folder = Self.folder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A lock file that opens and locks but can't be grown or mapped, as a full disk's would fail.
        try #require(mkfifo(folder.appendingPathComponent("lock").path, 0o600) == 0)
        let refused = #expect(throws: HeraldError.self) { try DiskResponseCache(directory: folder) }
        #expect(refused?.code == .fileIO)
        #expect(refused?.message.contains("store counts") == true)
    }

    @Test("the shared store counts are mapped from allocated blocks, never a hole a write could fault on")
    func countsHaveTheirBlocks() throws {
        let folder = Self.folder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A lock file of the counts' size that is all hole, as `ftruncate` alone leaves one.
        let path = folder.appendingPathComponent("lock").path
        let descriptor = open(path, O_RDWR | O_CREAT, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(ftruncate(descriptor, 4096) == 0)
        var status = stat()
        try #require(fstat(descriptor, &status) == 0)
        try #require(status.st_blocks == 0, "this file system allocated blocks for a truncated file")
        let counters = try #require(StoreCounters(descriptor: descriptor))
        // Before any count is written: the blocks are there.
        #expect(fstat(descriptor, &status) == 0)
        #expect(status.st_blocks * 512 >= 4096, "\(status.st_blocks) blocks of 512 bytes")
        #expect(counters.generation(of: 0) == 0)
    }

    @Test(
        "a store a killed process left counted as begun: no key of its bucket is taken as absent until a cache opens the folder alone"
    )
    func unfinishedStoreBlocksAbsentKeys() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let request = Request(url: URL(fileURLWithPath: "/").appendingPathComponent("unfinished"))
        let bucket = StoreCounters.bucket(of: DiskResponseCache.key(for: request))
        do {
            let cache = try DiskResponseCache(directory: folder)
            // What a process killed between counting a store as begun and counting it as ended leaves: the
            // bucket's begun count one past its ended count.
            let descriptor = open(folder.appendingPathComponent("lock").path, O_RDWR)
            #expect(descriptor >= 0)
            defer { close(descriptor) }
            var begun: UInt64 = 0
            #expect(pread(descriptor, &begun, 8, off_t(16 * bucket)) == 8)
            begun += 1
            #expect(pwrite(descriptor, &begun, 8, off_t(16 * bucket)) == 8)

            #expect(cache.cachedResponse(for: request) == nil)
            let before = cache.indexActivity()
            #expect(cache.cachedResponse(for: request) == nil)
            cache.removeCachedResponse(for: request)
            let after = cache.indexActivity()
            #expect(after.statements >= before.statements + 2)
            #expect(after.skippedReads == before.skippedReads)
        }
        // Alone on the folder, a new cache settles the counts: the key is taken as absent again.
        let reopened = try DiskResponseCache(directory: folder)
        #expect(reopened.cachedResponse(for: request) == nil)
        let before = reopened.indexActivity()
        #expect(reopened.cachedResponse(for: request) == nil)
        reopened.removeCachedResponse(for: request)
        #expect(reopened.indexActivity().statements == before.statements)
        #expect(reopened.indexActivity().skippedReads == before.skippedReads + 2)
    }

    @Test(
        "uncacheable responses cost the disk cache no index statement after the first; one that replaces a stored entry still removes it"
    )
    func uncacheableResponsesInASession() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start()
        let cache = try DiskResponseCache(directory: folder)
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        let session = SessionManager(configuration: configuration)

        let uncacheable = Request(url: server.url("/headers?Cache-Control=no-store&X-Kind=uncacheable"))
        _ = try await session.data(for: uncacheable)
        let afterFirst = cache.indexActivity()
        for _ in 0..<5 { _ = try await session.data(for: uncacheable) }
        let afterMore = cache.indexActivity()
        #expect(server.requestCount == 6)
        // Each: a lookup before the request and a removal after it, both answered without the index.
        #expect(afterMore.statements == afterFirst.statements)
        #expect(afterMore.skippedReads == afterFirst.skippedReads + 10)

        // Another cache on the folder stores an entry for a URL while its request is in flight (after the
        // lookup that found nothing): the answer the session doesn't store still removes it.
        let other = try DiskResponseCache(directory: folder)
        let vetoed = Request(url: server.url("/headers?Cache-Control=max-age%3D600&X-Kind=vetoed"))
        let older = Self.entry("older", url: vetoed.url)
        _ = try await session.data(for: vetoed)
        cache.removeCachedResponse(for: vetoed)
        #expect(cache.cachedResponse(for: vetoed) == nil)
        session.dataTaskWillCacheResponse = { _, _ in
            other.storeCachedResponse(older, for: vetoed)
            return nil
        }
        _ = try await session.data(for: vetoed)
        #expect(server.requestCount == 8)
        #expect(other.cachedResponse(for: vetoed) == nil)
        #expect(cache.cachedResponse(for: vetoed) == nil)

        // The same with the session's own cache storing it.
        session.dataTaskWillCacheResponse = { _, _ in
            cache.storeCachedResponse(older, for: vetoed)
            return nil
        }
        _ = try await session.data(for: vetoed)
        #expect(server.requestCount == 9)
        #expect(cache.cachedResponse(for: vetoed) == nil)
        #expect(cache.count == 0)
        await session.invalidateAndWait(cancelingTasks: true)
        try await server.shutdown()
    }
}
