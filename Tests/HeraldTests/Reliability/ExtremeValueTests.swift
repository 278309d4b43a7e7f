import Foundation
@testable import Herald
@testable import HeraldEngine
import HeraldTesting
import Testing

/// Values at the edge of their types — infinite timeouts, durations of centuries, lengths near `Int64.max`, an
/// index edited behind the cache's back — are what a caller or another process may hand Herald: each gets a
/// working answer or a typed error, never a trap or a hang.
@Suite("Extreme values get an answer or a typed error, never a trap")
struct ExtremeValueTests {
    @Test("a timeout for libcurl: none for 0, negative, NaN and infinite seconds; else milliseconds, 1 to 2³² − 1")
    func curlMilliseconds() {
        for none in [0, -1, -.infinity, .nan, .infinity] as [TimeInterval] {
            #expect(Transfer.milliseconds(none) == nil)
        }
        #expect(Transfer.milliseconds(0.0001) == 1)
        #expect(Transfer.milliseconds(1.5) == 1500)
        #expect(Transfer.milliseconds(7 * 24 * 3600) == 604_800_000)
        // libcurl keeps 32 bits of milliseconds (about 49.7 days) and cuts a longer timeout to that itself.
        #expect(Transfer.milliseconds(60 * 24 * 3600) == 4_294_967_295)
        #expect(Transfer.milliseconds(1e300) == 4_294_967_295)
        #expect(Transfer.milliseconds(.greatestFiniteMagnitude) == 4_294_967_295)
    }

    @Test("infinite and enormous timeouts, for the session and the request, mean none: the request succeeds")
    func infiniteTimeouts() async throws {
        var configuration = SessionConfiguration()
        configuration.timeoutIntervalForRequest = .infinity
        configuration.timeoutIntervalForResource = .infinity
        let fixture = try await SessionFixture.make(configuration: configuration)
        let (_, first) = try await fixture.session.data(for: Request(url: fixture.server.url("/json")))
        #expect(first.statusCode == 200)
        let enormous = Request(url: fixture.server.url("/json"), timeoutInterval: 1e300)
        let (_, second) = try await fixture.session.data(for: enormous)
        #expect(second.statusCode == 200)
        try await fixture.tearDown()
    }

    @Test("invalidateAndWait with a timeout of centuries waits as forever does, and returns true")
    func centuriesOfWaiting() {
        let session = SessionManager()
        #expect(session.invalidateAndWait(timeout: .seconds(Int64.max)))
        let other = SessionManager()
        #expect(other.invalidateAndWait(timeout: .seconds(9_300_000_000)))
    }

    @Test("a multipart part that would take the body past Int64.max bytes is refused with invalidRequest")
    func multipartLengthOverflow() throws {
        var form = MultipartFormData()
        try form.append(Data("a".utf8), name: "small")
        try form.append(length: Int64.max / 2, name: "half", fileName: "half.bin") { BodyStream { _ in 0 } }
        let before = form.contentLength
        #expect(form.count == 2)
        do throws(HeraldError) {
            try form.append(length: Int64.max / 2, name: "more", fileName: "more.bin") { BodyStream { _ in 0 } }
            Issue.record("a part past Int64.max bytes was appended")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("longer than \(Int64.max) bytes"))
        }
        // The refused part is not kept: the form is as it was, and its length can still be read.
        #expect(form.count == 2)
        #expect(form.contentLength == before)
        do throws(HeraldError) {
            try form.append(headers: ["Content-Disposition": "form-data; name=\"x\""], body: Data(count: 1))
            #expect(form.count == 3)
        } catch {
            Issue.record("a one-byte part still fits: \(error)")
        }
    }

    @Test("a body file name edited into the index to point outside the cache is never read or removed; its row goes")
    func indexNamesAnOutsideFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder)
        let request = Request(url: URL(string: "http://127.0.0.1/report")!)
        cache.storeCachedResponse(
            CachedResponse(
                response: HTTPResponse(url: request.url, statusCode: 200, headers: ["Cache-Control": "max-age=60"]),
                data: Data("0123456789".utf8)), for: request)
        #expect(cache.count == 1)
        // A file beside the cache's folder, of another size than the row records.
        let outside = folder.appendingPathComponent("notes.txt")
        #expect(FileManager.default.createFile(atPath: outside.path, contents: Data("keep me".utf8)))
        CacheIndexEditing.run(in: folder, "UPDATE entries SET file = '../notes.txt'")
        #expect(cache.cachedResponse(for: request) == nil)
        #expect(FileManager.default.contents(atPath: outside.path) == Data("keep me".utf8))
        #expect(cache.count == 0)
        #expect(DiskResponseCache.isBodyFileName(UUID().uuidString.lowercased()))
        #expect(!DiskResponseCache.isBodyFileName(UUID().uuidString.uppercased()))
        #expect(!DiskResponseCache.isBodyFileName("../" + String(UUID().uuidString.lowercased().dropFirst(3))))
    }

    @Test("a row whose key the index holds as a blob is still evicted: a store past the capacity ends, and fits")
    func blobKeyIsEvicted() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try DiskResponseCache(directory: folder, capacity: 4096)
        func entry(_ path: String) -> (CachedResponse, Request) {
            let request = Request(url: URL(string: "http://127.0.0.1/\(path)")!)
            let response = CachedResponse(
                response: HTTPResponse(url: request.url, statusCode: 200, headers: ["Cache-Control": "max-age=60"]),
                data: Data(repeating: 0x61, count: 2500))
            return (response, request)
        }
        let (first, firstRequest) = entry("first")
        cache.storeCachedResponse(first, for: firstRequest)
        #expect(cache.count == 1)
        CacheIndexEditing.run(in: folder, "UPDATE entries SET key = CAST(key AS BLOB)")
        // Two entries don't fit in 4 KiB: storing the second must evict the first, whatever its key's type.
        let (second, secondRequest) = entry("second")
        cache.storeCachedResponse(second, for: secondRequest)
        #expect(cache.count == 1)
        #expect(cache.cachedResponse(for: secondRequest)?.data == second.data)
    }
}
