import Foundation
@testable import HeraldTesting
import Testing

@Suite("Faults")
struct FaultTests {
    @Test("/fault/reset-before-headers resets the connection without sending a byte")
    func resetBeforeHeaders() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/reset-before-headers"), port: server.port)
            #expect(response.byteCount == 0)
            #expect(response.ending != .closed)
        }
    }

    @Test("/fault/reset-mid-body declares more than it sends, sends N bytes, then resets")
    func resetMidBody() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/reset-mid-body?bytes=1000&declared=5000"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Length") == "5000")
            #expect(response.bodyByteCount <= 1000)
            #expect(response.body == TestServer.expectedBytes(in: 0..<response.body.count))
            #expect(response.ending != .closed)
            try await server.waitUntil { $0.requests.first?.isComplete == true }
            #expect(server.bodyBytesSent == 1000)
        }
    }

    @Test("/fault/stall never answers, and releases the connection when the client leaves")
    func stall() async throws {
        try await withTestServer { server in
            let client = try await RawHTTPClient.connect(port: server.port)
            try await client.send(RawHTTPClient.get("/fault/stall"))
            try await server.waitForRequests(count: 1)
            await #expect(throws: RawHTTPClient.TimedOut.self) {
                _ = try await client.response(timeout: .milliseconds(300))
            }
            try await server.waitForOpenConnections(0)
            #expect(server.requests.first?.responseStatus == nil)
            #expect(server.bytesSent == 0)
        }
    }

    @Test("/fault/truncated declares N bytes, sends M, then closes normally")
    func truncated() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/truncated?declared=100&sent=40"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Length") == "100")
            #expect(response.body == TestServer.expectedBytes(in: 0..<40))
            #expect(response.ending == .closed)
        }
    }

    @Test("/fault/truncated?gzip=1 sends the first M bytes of a gzip encoding of N pattern bytes, which decode as sent")
    func truncatedGzip() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/truncated?declared=200000&sent=150000&gzip=1"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Encoding") == "gzip")
            #expect(response.header("ETag") == "\"gzip-200000\"")
            // 10 bytes of gzip header, four stored blocks of 5 bytes of header each, the 8-byte trailer.
            #expect(response.header("Content-Length") == "200038")
            #expect(response.body.count == 150_000)
            #expect(response.ending == .closed)
            // Two whole blocks of 65,535 bytes and 18,905 of the third: `gzip` decodes all it was sent.
            // 1: "unexpected end of file".
            let decoded = try Self.gunzip(response.body, status: 1)
            #expect(decoded.count == 149_975)
            #expect(decoded == TestServer.expectedBytes(in: 0..<149_975))
        }
    }

    @Test(
        "the gzip encoding of the pattern is a whole gzip stream, its checksum and length included",
        arguments: [0, 1, 65_535, 65_536, 200_000])
    func gzipEncodingIsWhole(count: Int) throws {
        let decoded = try Self.gunzip(BytePattern.gzipEncoding(count: count), status: 0)
        #expect(decoded == TestServer.expectedBytes(in: 0..<count))
    }

    /// What `gzip -dc` writes for `bytes`, which may stop short of the end of their stream; expects it to exit with
    /// `status`.
    private static func gunzip(_ bytes: [UInt8], status: Int32) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gunzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("in.gz")
        let output = folder.appendingPathComponent("out")
        try Data(bytes).write(to: input)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let outputHandle = try FileHandle(forWritingTo: output)
        defer { try? outputHandle.close() }
        let process = SpawnedProcess()
        // `timeout`: a decoder that hung would otherwise hold the test for ever.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["30", "gzip", "-dc", input.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputHandle
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == status)
        return [UInt8](try Data(contentsOf: output))
    }

    @Test("/fault/truncated with sent >= declared is a bad request")
    func truncatedInvalid() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/truncated?declared=10&sent=10"), port: server.port)
            #expect(response.statusCode == 400)
        }
    }

    @Test("/fault/bad-chunked declares chunked encoding, then breaks the chunk framing")
    func badChunked() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(RawHTTPClient.get("/fault/bad-chunked"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(String(decoding: response.body, as: UTF8.self) == "5\r\nhello\r\nZZ-not-hex\r\ngarbage\r\n")
            #expect(response.ending == .closed)
            try await server.waitForOpenConnections(0)
            #expect(server.bytesSent == response.byteCount)
            #expect(server.bodyBytesSent == 0)
        }
    }

    @Test("/fault/garbage-status writes exactly HELLO and a blank line, then closes")
    func garbageStatus() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/garbage-status"), port: server.port)
            #expect(response.bytes == Array("HELLO\r\n\r\n".utf8))
            #expect(response.ending == .closed)
        }
    }

    @Test("/fault/garbage-status?line=L writes L and a blank line instead, then closes")
    func garbageStatusLine() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/garbage-status?line=HTTP/1.1%20abc"), port: server.port)
            #expect(response.bytes == Array("HTTP/1.1 abc\r\n\r\n".utf8))
            #expect(response.ending == .closed)
        }
    }

    @Test("an unknown fault is 404")
    func unknownFault() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(RawHTTPClient.get("/fault/nope"), port: server.port)
            #expect(response.statusCode == 404)
        }
    }

    @Test("a request NIO cannot parse gets 400 and the connection closes")
    func malformedRequest() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange("NOT HTTP AT ALL\r\n\r\n", port: server.port)
            #expect(response.statusCode == 400)
        }
    }
}
