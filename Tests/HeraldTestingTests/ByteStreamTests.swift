import Foundation
import Testing

@testable import HeraldTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Byte streams")
struct ByteStreamTests {
    @Test("/bytes/{n} sends n pattern bytes with Content-Length, and counts exactly n body bytes sent")
    func fixedLength() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(RawHTTPClient.get("/bytes/1000"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Length") == "1000")
            #expect(response.header("Accept-Ranges") == "bytes")
            #expect(response.body == TestServer.expectedBytes(in: 0..<1000))
            try await server.waitUntil { $0.requests.first?.isComplete == true }
            #expect(server.bodyBytesSent == 1000)
            #expect(server.bodyBytesSent(forPath: "/bytes/1000") == 1000)
            #expect(server.bytesSent == response.byteCount)
        }
    }

    @Test("/bytes/0 is an empty 200")
    func zeroBytes() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(RawHTTPClient.get("/bytes/0"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Length") == "0")
            #expect(response.body.isEmpty)
        }
    }

    @Test("/bytes/{n}?chunked=1 uses chunked transfer encoding that URLSession decodes to the pattern")
    func chunked() async throws {
        try await withTestServer { server in
            let raw = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/300?chunked=1&chunkSize=100"), port: server.port)
            #expect(raw.header("Transfer-Encoding") == "chunked")
            #expect(raw.header("Content-Length") == nil)
            #expect(raw.body.count > 300)  // Chunk framing.
            #expect(String(decoding: raw.body.prefix(5), as: UTF8.self) == "64\r\n\u{0}")

            let (data, response) = try await HTTP.get(server.url("/bytes/300?chunked=1&chunkSize=100"))
            #expect(response.statusCode == 200)
            #expect(Array(data) == TestServer.expectedBytes(in: 0..<300))
        }
    }

    @Test("large paced chunks keep their spacing: one chunk per tick even when a write fills the socket")
    func delayedLargeChunks() async throws {
        try await withTestServer { server in
            let count = 4 << 20
            let start = ContinuousClock.now
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/\(count)?chunkSize=1048576&delayMs=300"), port: server.port)
            // Three pauses between four 1 MiB chunks. A flush that drained the socket used to re-enter the
            // pump before the pause was marked and send the next chunk at once.
            #expect(ContinuousClock.now - start >= .milliseconds(900))
            #expect(response.body.count == count)
        }
    }

    @Test("chunkSize and delayMs stream the body in separate, spaced writes")
    func delayedChunks() async throws {
        try await withTestServer { server in
            let start = ContinuousClock.now
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/40?chunkSize=10&delayMs=50"), port: server.port)
            #expect(ContinuousClock.now - start >= .milliseconds(150))  // Three pauses between four chunks.
            #expect(response.body == TestServer.expectedBytes(in: 0..<40))
        }
    }

    @Test("a Range request gets 206 with only the remaining bytes, so a resumed download sends n bytes in total")
    func resume() async throws {
        try await withTestServer { server in
            let first = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/1000", headers: ["Range: bytes=0-399"]), port: server.port)
            #expect(first.statusCode == 206)
            #expect(first.header("Content-Range") == "bytes 0-399/1000")
            let etag = try #require(first.header("ETag"))

            let rest = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/1000", headers: ["Range: bytes=400-", "If-Range: \(etag)"]), port: server.port
            )
            #expect(rest.statusCode == 206)
            #expect(rest.header("Content-Range") == "bytes 400-999/1000")
            #expect(rest.header("Content-Length") == "600")
            #expect(first.body + rest.body == TestServer.expectedBytes(in: 0..<1000))

            try await server.waitUntil { $0.requests.count == 2 && $0.requests.allSatisfy(\.isComplete) }
            #expect(server.bodyBytesSent(forPath: "/bytes/1000") == 1000)
        }
    }

    @Test("If-Range with a stale validator, or ranges=0, serves the whole body with 200")
    func rangeIgnored() async throws {
        try await withTestServer { server in
            let stale = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/100", headers: ["Range: bytes=50-", #"If-Range: "other""#]), port: server.port
            )
            #expect(stale.statusCode == 200)
            #expect(stale.body.count == 100)

            let disabled = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/100?ranges=0", headers: ["Range: bytes=50-"]), port: server.port)
            #expect(disabled.statusCode == 200)
            #expect(disabled.header("Accept-Ranges") == "none")
            #expect(disabled.body.count == 100)
        }
    }

    @Test("a range past the end is 416 with the full length in Content-Range, and a page")
    func unsatisfiableRange() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/100", headers: ["Range: bytes=100-"]), port: server.port)
            #expect(response.statusCode == 416)
            #expect(response.header("Content-Range") == "bytes */100")
            // A page, as real servers send, and none of the representation.
            #expect(String(decoding: response.body, as: UTF8.self) == "416 Range Not Satisfiable\n")
            #expect(server.bodyBytesSent == 26)
        }
    }

    @Test("a 64 MiB body streams with backpressure: little is ever queued and every byte is counted once")
    func largeBodyStreams() async throws {
        try await withTestServer { server in
            let size = 64 << 20
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/bytes/\(size)"), port: server.port, retainingAtMost: 1 << 16, timeout: .seconds(120)
            )
            #expect(response.ending == .closed)
            #expect(response.bodyByteCount == size)
            #expect(response.body == TestServer.expectedBytes(in: 0..<response.body.count))
            try await server.waitUntil { $0.requests.first?.isComplete == true }
            #expect(server.bodyBytesSent == size)
            // Writes stop at the channel's high-water mark (64 KiB) plus one chunk (64 KiB); without backpressure
            // the whole body would be queued at once.
            #expect(server.recorder.peakQueuedBodyBytes <= 256 << 10)
            #expect(server.recorder.peakQueuedBodyBytes > 0)
        }
    }

    @Test("a client leaving mid-stream stops the stream and completes the record with what was sent")
    func clientLeavesMidStream() async throws {
        try await withTestServer { server in
            let client = try await RawHTTPClient.connect(port: server.port, retainingAtMost: 0)
            // Paced (80 s for the whole body), so the client is certain to leave long before the end.
            try await client.send(RawHTTPClient.get("/bytes/\(1 << 30)?chunkSize=65536&delayMs=5"))
            try await server.waitUntil { $0.bodyBytesSent > 0 }
            await client.close()
            try await server.waitUntil { $0.openConnections == 0 && $0.requests.first?.isComplete == true }
            let sent = server.bodyBytesSent
            #expect(sent > 0 && sent < 1 << 30)
        }
    }
}
