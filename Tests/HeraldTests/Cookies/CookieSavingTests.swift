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
