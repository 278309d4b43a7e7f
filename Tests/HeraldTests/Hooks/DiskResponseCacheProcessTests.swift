import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// The disk cache across real processes: one killed at random points mid-churn, two churning one folder at
/// once, and one that fills the folder for this process to answer from.
///
/// The churning children are `herald-test-server cache-churn …` (HeraldTesting's `DiskCacheChurn`), built next
/// to the test binary by `swift build --build-tests`.
@Suite("Disk response cache across processes")
struct DiskResponseCacheProcessTests {
    /// A child process whose whole output is read as it arrives and whose end is awaited with a timeout.
    final class Child: Sendable {
        struct Failure: Error, CustomStringConvertible {
            let description: String
        }

        let process = SpawnedProcess()
        private let output = Locked("")
        private let ready = OneShot<Void>()
        /// Sent once the output has ended (every byte read): the child has exited or closed it.
        private let ended = OneShot<Void>()
        private let exited = OneShot<Int32>()
        /// Kept so that the child's standard input stays open until it exits (a child that serves until its
        /// input ends).
        private let input = Pipe()

        /// Starts `executable` with `arguments`; ``waitUntilReady(timeout:)`` returns once it has printed
        /// `readyText`.
        init(_ executable: URL, _ arguments: [String], readyText: String = "ready\n") throws {
            process.executableURL = executable
            process.arguments = arguments
            process.standardInput = input
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            let exited = exited
            process.terminationHandler = { exited.send($0.terminationStatus) }
            try process.run()
            let (output, ready, ended) = (output, ready, ended)
            PipeReader.start(reading: pipe.fileHandleForReading, name: "herald-cache-child-output") { data in
                let text = output.withLock { text in
                    text += String(decoding: data, as: UTF8.self)
                    return text
                }
                if text.contains(readyText) { ready.send(()) }
            } onEnd: {
                ended.send(())
            }
        }

        /// Everything the child printed so far.
        var text: String { output.withLock { $0 } }

        func waitUntilReady(timeout: Duration = .seconds(30)) async throws {
            do {
                try await ready.value(timeout: timeout)
            } catch {
                throw Failure(description: "the child did not get ready within \(timeout): \(text)")
            }
        }

        /// Awaits the child's exit and the end of its output; returns its termination status (the signal's
        /// number when a signal ended it).
        @discardableResult
        func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
            do {
                let status = try await exited.value(timeout: timeout)
                try await ended.value(timeout: timeout)
                return status
            } catch {
                kill(process.processIdentifier, SIGKILL)
                throw Failure(description: "the child did not exit within \(timeout): \(text)")
            }
        }

        /// Kills the child with SIGKILL and awaits its end.
        func killAndWait() async throws {
            kill(process.processIdentifier, SIGKILL)
            let status = try await waitForExit(timeout: .seconds(30))
            #expect(process.terminationReason == .uncaughtSignal && status == SIGKILL, "\(text)")
        }
    }

    /// herald-cache-proxy, built next to the test binary by `swift build --build-tests`.
    static func proxyExecutable() throws -> URL {
        try #require(
            TestServerProcess.executable.map {
                $0.deletingLastPathComponent().appendingPathComponent("HeraldCacheProxy")
            }.flatMap { FileManager.default.isExecutableFile(atPath: $0.path) ? $0 : nil },
            "HeraldCacheProxy is not built next to the test binary (build with `swift build --build-tests`)")
    }

    private static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-cache-processes-\(UUID().uuidString)")
    }

    private static func bodyFiles(in folder: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("bodies").path)) ?? [])
    }

    private static func testServerExecutable() throws -> URL {
        try #require(
            TestServerProcess.executable,
            "herald-test-server is not built next to the test binary (build with `swift build --build-tests`)")
    }

    /// Opens `folder` in this process and checks it: a sound index, entries within `capacity`, one body file
    /// per entry, and every entry it serves whole and right. Returns how many it served.
    private static func checkFolder(_ folder: URL, capacity: Int, context: String) throws -> Int {
        let cache = try DiskResponseCache(directory: folder, capacity: capacity)
        #expect(cache.indexIntegrity() == ["ok"], "\(context)")
        #expect(cache.currentSize <= capacity, "\(context)")
        // Opened with no other cache on the folder: whatever a killed store left is gone, so every body file
        // is an entry's.
        #expect(bodyFiles(in: folder).count == cache.count, "\(context)")
        var served = 0
        for key in 0..<DiskCacheChurn.keys {
            guard let entry = cache.cachedResponse(for: DiskCacheChurn.request(key: key)) else { continue }
            served += 1
            if let wrong = DiskCacheChurn.check(entry, key: key) { Issue.record("\(context): \(wrong)") }
        }
        return served
    }

    @Test(
        "a process killed with SIGKILL at 100 random points of a store and evict loop leaves a folder whose every served entry is whole and right"
    )
    func killedMidChurn() async throws {
        let executable = try Self.testServerExecutable()
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Room for a few entries of the churn's sizes: nearly every store evicts.
        let capacity = 96 << 10
        let seed = UInt64.random(in: 1...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        var served = 0
        var cutShort = 0
        for round in 0..<100 {
            let child = try Child(
                executable,
                [
                    "cache-churn", "--directory", folder.path, "--writer", "r\(round)",
                    "--seed", String(seed &+ UInt64(round)), "--capacity", String(capacity),
                ])
            try await child.waitUntilReady()
            // The kill lands anywhere in the loop: mid-write, mid-fsync, between the rename and the commit,
            // mid-eviction.
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<30_000, using: &generator)))
            try await child.killAndWait()
            let files = Self.bodyFiles(in: folder)
            let context = "round \(round) (seed \(seed))"
            served += try Self.checkFolder(folder, capacity: capacity, context: context)
            // The check's open removed what the killed store left (a temporary or an unnamed body).
            if !files.subtracting(Self.bodyFiles(in: folder)).isEmpty { cutShort += 1 }
        }
        // The churn ran between the kills: the checks found entries to compare.
        #expect(served > 100, "seed \(seed)")
        print(
            "DiskResponseCacheProcessTests: 100 kills, \(served) entries served and checked, \(cutShort) kills left "
                + "files behind (seed \(seed))")
    }

    /// `(hits, foreign hits, start, end)` from a churn's `done` line.
    private static func summary(of output: String) -> (hits: Int, foreign: Int, start: Double, end: Double)? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("done ") }) else { return nil }
        var fields: [String: String] = [:]
        for pair in line.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        guard let hits = fields["hits"].flatMap(Int.init), let foreign = fields["foreign"].flatMap(Int.init),
            let start = fields["start"].flatMap(Double.init), let end = fields["end"].flatMap(Double.init)
        else { return nil }
        return (hits, foreign, start, end)
    }

    @Test(
        "two processes storing, reading and evicting in one folder at once serve only whole, right entries; the index stays sound"
    )
    func twoProcessesShareAFolder() async throws {
        let executable = try Self.testServerExecutable()
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let capacity = 128 << 10
        let seed = UInt64.random(in: 1...UInt64.max)
        let children = try ["a", "b"].enumerated().map { index, writer in
            try Child(
                executable,
                [
                    "cache-churn", "--directory", folder.path, "--writer", writer, "--seed",
                    String(seed &+ UInt64(index)), "--capacity", String(capacity), "--operations", "1500",
                ])
        }
        for child in children {
            let status = try await child.waitForExit()
            #expect(status == 0 && child.process.terminationReason == .exit, "seed \(seed): \(child.text)")
        }
        let summaries = children.map { Self.summary(of: $0.text) }
        let a = try #require(summaries[0], "\(children[0].text)")
        let b = try #require(summaries[1], "\(children[1].text)")
        // They ran at once, and each answered from entries the other stored.
        #expect(a.start < b.end && b.start < a.end, "a \(a), b \(b)")
        #expect(a.foreign > 0 && b.foreign > 0, "a \(a), b \(b)")
        let served = try Self.checkFolder(folder, capacity: capacity, context: "after both (seed \(seed))")
        print("DiskResponseCacheProcessTests: shared folder: a \(a), b \(b), \(served) entries served at the end")
    }

    @Test(
        "entries stored by another process, since killed, answer a fresh URL without a request and revalidate a stale one with 304"
    )
    func anotherProcessFilledTheFolder() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let proxyExecutable = try Self.proxyExecutable()
        let server = try await TestServer.start()
        let freshPath = "/headers?Cache-Control=max-age%3D600&X-Kind=fresh"
        let stalePath = "/headers?Cache-Control=max-age%3D0&ETag=%22v1%22&X-Kind=stale"
        let upstream = server.url("/").absoluteString.dropLast()  // http://127.0.0.1:<port>

        // The other process: herald-cache-proxy, whose one session caches in the folder, fetching both URLs.
        let proxy = try Child(
            proxyExecutable, ["--upstream", String(upstream), "--cache-directory", folder.path],
            readyText: "\n")
        try await proxy.waitUntilReady()
        let port = try #require(
            proxy.text.split(separator: "\n").first.flatMap { Int($0) }, "herald-cache-proxy: \(proxy.text)")
        let client = SessionManager(configuration: SessionConfiguration())
        var viaProxy: [Data] = []
        for path in [freshPath, stalePath] {
            let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
            let (body, response) = try await client.data(for: Request(url: url))
            #expect(response.statusCode == 200)
            viaProxy.append(body)
        }
        await client.invalidateAndWait(cancelingTasks: true)
        #expect(server.requestCount == 2)
        // The proxy answered after its session stored each response: killed now, it has nothing in flight.
        try await proxy.killAndWait()

        var configuration = SessionConfiguration()
        configuration.responseCache = try DiskResponseCache(directory: folder)
        let session = SessionManager(configuration: configuration)
        let (fresh, freshResponse) = try await session.data(for: Request(url: server.url(freshPath)))
        #expect(server.requestCount == 2)
        #expect(fresh == viaProxy[0])
        #expect(freshResponse.headers["X-Kind"] == "fresh")
        let (stale, staleResponse) = try await session.data(for: Request(url: server.url(stalePath)))
        #expect(server.requestCount == 3)
        let revalidation = try #require(server.requests.last)
        #expect(revalidation.headers.contains { $0.name.lowercased() == "if-none-match" && $0.value == "\"v1\"" })
        #expect(revalidation.responseStatus == 304)
        #expect(staleResponse.statusCode == 200)
        #expect(stale == viaProxy[1])
        await session.invalidateAndWait(cancelingTasks: true)
        try await server.shutdown()
    }

    /// Runs `herald-test-server cache-store` for key `key`, version `version`, in `folder`, to its end.
    private static func storeInAnotherProcess(_ folder: URL, key: Int, version: String) async throws {
        let child = try Child(
            try testServerExecutable(),
            ["cache-store", "--directory", folder.path, "--key", String(key), "--version", version],
            readyText: "stored\n")
        let status = try await child.waitForExit()
        #expect(status == 0 && child.text.contains("stored"), "\(child.text)")
    }

    @Test(
        "a key this process found absent is served once another process stores it, and a removal asked for after another process's store removes it"
    )
    func absentKeyAcrossProcesses() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder)
        let key = 5
        let request = DiskCacheChurn.request(key: key)
        #expect(cache.cachedResponse(for: request) == nil)
        cache.removeCachedResponse(for: request)
        let skipped = cache.indexActivity().skippedReads
        #expect(skipped >= 1)

        try await Self.storeInAnotherProcess(folder, key: key, version: "other.1")
        let served = try #require(cache.cachedResponse(for: request))
        #expect(DiskCacheChurn.check(served, key: key) == nil)
        #expect(served.response.headers["X-Churn-Version"] == "other.1")

        // Absent again after a removal; the other process stores it anew; a removal asked for here (as an
        // uncacheable response asks for one) must remove that entry.
        cache.removeCachedResponse(for: request)
        #expect(cache.cachedResponse(for: request) == nil)
        #expect(cache.indexActivity().skippedReads > skipped)
        try await Self.storeInAnotherProcess(folder, key: key, version: "other.2")
        cache.removeCachedResponse(for: request)
        #expect(cache.cachedResponse(for: request) == nil)
        #expect(cache.count == 0)
        #expect(Self.bodyFiles(in: folder).isEmpty)
    }

    @Test(
        "processes opening a new folder at the same moment and storing one entry each: every store is kept"
    )
    func simultaneousFirstOpens() async throws {
        let executable = try Self.testServerExecutable()
        for round in 0..<20 {
            let folder = Self.folder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let children = try (0..<3).map { index in
                try Child(
                    executable,
                    [
                        "cache-store", "--directory", folder.path, "--key", String(index), "--version",
                        "r\(round).\(index)",
                    ], readyText: "stored\n")
            }
            for child in children {
                let status = try await child.waitForExit()
                #expect(status == 0 && child.text.contains("stored"), "round \(round): \(child.text)")
            }
            // Before a cache that doesn't open the folder alone waited for the other's shared lock, its
            // connection could meet the index mid-set-up and its store's transaction fail at once, unreported.
            let cache = try DiskResponseCache(directory: folder)
            #expect(cache.count == 3, "round \(round)")
        }
    }
}
