import Foundation
@testable import Herald
import HeraldTesting
import Testing

/// When a persistent cookie store writes its file: one write for a burst of changes, a failed last write
/// reported by `close()`, and every cookie written by the time a session's invalidation is waited for.
@Suite("Cookie store saving")
struct CookieSavingTests {
    @Test("a burst of changes is written in far fewer saves than changes, and the file ends as the store does")
    func burstCoalesces() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        let store = try CookieStore(persistingTo: file)
        let expiry = Date().addingTimeInterval(3600)
        for number in 0..<2_000 {
            store.setCookie(Cookie(name: "c\(number % 50)", value: "\(number)", domain: "h.example", expiresAt: expiry))
        }
        #expect(store.flush() == nil)
        let saves = store.savesRun.withLock { $0 }
        // One save per change before: 2,000 writes of the whole file, each with two fsyncs.
        #expect(saves >= 1)
        #expect(saves < 1_000, "\(saves) saves for 2,000 changes")
        #expect(try folder.cookieNames(in: file) == Set(store.allCookies.map(\.name)))
        #expect(store.close() == nil)
        let values = try CookieStore(persistingTo: file).allCookies.map(\.value)
        #expect(Set(values) == Set((1_950..<2_000).map(String.init)))
    }

    @Test("close() returns the last save's failure; nil once the file has gone")
    func closeReportsFailure() throws {
        let folder = try CookieFolder()
        let file = folder.file()
        let store = try CookieStore(persistingTo: file)
        // The folder is gone: the save can't make its temporary file there.
        folder.remove()
        store.setCookie(
            Cookie(name: "lost", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        let failure = store.close()
        #expect(failure?.code == .fileIO)
        #expect(store.close() == nil)
        #expect(store.allCookies.map(\.name) == ["lost"])
    }

    @Test("once invalidateAndWait returns, the cookies the session's responses set are in the store's file")
    func invalidationWaitsForTheSave() async throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        let server = try await TestServer.start()
        var configuration = SessionConfiguration()
        configuration.httpCookieStore = try CookieStore(persistingTo: file)
        let session = SessionManager(configuration: configuration)
        let kept = "cookie=kept%3D1%3B%20Max-Age%3D3600"
        _ = try await session.data(for: Request(url: server.url("/login?redirect=/echo&\(kept)")))
        await session.invalidateAndWait()
        #expect(try folder.cookieNames(in: file) == ["kept"])
        let synchronous = SessionManager(configuration: configuration)
        let later = "cookie=later%3D1%3B%20Max-Age%3D3600"
        _ = try await synchronous.data(for: Request(url: server.url("/login?redirect=/echo&\(later)")))
        #expect(synchronous.invalidateAndWait(timeout: .seconds(30)))
        #expect(try folder.cookieNames(in: file) == ["kept", "later"])
        configuration.httpCookieStore?.close()
        try await server.shutdown()
    }
}

/// What a persistent store makes of the file it is given: a symbolic link, a FIFO, line ends of another system.
@Suite("Cookie store file")
struct CookieFileTests {
    @Test("a file reached through a symbolic link is saved and locked where the link points")
    func symbolicLink() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let target = folder.file("real.jsonl")
        let link = folder.file("link.jsonl")
        let otherLink = folder.file("other-link.jsonl")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        try FileManager.default.createSymbolicLink(at: otherLink, withDestinationURL: target)
        let store = try CookieStore(persistingTo: link)
        store.setCookie(Cookie(name: "a", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        #expect(store.flush() == nil)
        // Before, the save renamed a new file over the link: the target never changed again, and the link was gone.
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        #expect(try folder.cookieNames(in: target) == ["a"])
        // A second store through another link to the same file is refused, as one through the same path is.
        let second = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: otherLink) }
        #expect(second?.code == .fileInUse)
        #expect(store.close() == nil)
    }

    @Test(
        "a link another user planted in a sticky, world-writable folder is not followed: nothing is written there",
        .enabled(if: geteuid() == 0, "makes a link owned by another user: needs root (CI runs as root)"))
    func plantedLinkNotFollowed() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let shared = folder.file("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        try #require(chmod(shared.path, 0o1777) == 0)
        let target = folder.file("victim.jsonl")
        let link = shared.appendingPathComponent("cookies.jsonl")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        try #require(lchown(link.path, 65534, 65534) == 0)
        let store = try CookieStore(persistingTo: link)
        store.setCookie(Cookie(name: "a", value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
        #expect(store.close() == nil)
        // The store wrote its own file in place of the link, never where another user's link pointed.
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try folder.cookieNames(in: link) == ["a"])
    }

    @Test("a FIFO at the file's path is refused at once with fileIO, saying why; nothing blocks")
    func notARegularFile() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let fifo = folder.file("fifo.jsonl")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        // Opened without blocking, checked to be a regular file, and refused with that reason.
        let refused = #expect(throws: HeraldError.self) { try CookieStore(persistingTo: fifo) }
        #expect(refused?.code == .fileIO)
        #expect(refused?.message.contains("not a regular file") == true)
    }

    @Test("a file whose lines end in CR LF loads")
    func crlfLines() throws {
        let folder = try CookieFolder()
        defer { folder.remove() }
        let file = folder.file()
        do {
            let store = try CookieStore(persistingTo: file)
            for name in ["a", "b"] {
                store.setCookie(
                    Cookie(name: name, value: "1", domain: "h.example", expiresAt: Date().addingTimeInterval(3600)))
            }
            #expect(store.close() == nil)
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        try Data(text.replacingOccurrences(of: "\n", with: "\r\n").utf8).write(to: file)
        // Before, CR LF is one Character, the split found no line end, and the file was "line 1 is not a cookie".
        let reloaded = try CookieStore(persistingTo: file)
        #expect(Set(reloaded.allCookies.map(\.name)) == ["a", "b"])
        #expect(reloaded.close() == nil)
    }
}
