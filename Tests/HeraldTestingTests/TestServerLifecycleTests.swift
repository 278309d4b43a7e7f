import Foundation
import HeraldTesting
import Testing

@Suite("TestServer lifecycle")
struct TestServerLifecycleTests {
    @Test("the server listens on 127.0.0.1 at a kernel-chosen, non-zero port")
    func bindsLoopback() async throws {
        try await withTestServer { server in
            #expect(server.port > 0)
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
            #expect(server.url("/status/500?x=1").absoluteString == "http://127.0.0.1:\(server.port)/status/500?x=1")
            let response = try await RawHTTPClient.exchange(RawHTTPClient.get("/text"), port: server.port)
            #expect(response.statusCode == 200)
        }
    }

    @Test("url(_:) percent-encodes characters a URL cannot hold")
    func urlEncodes() async throws {
        try await withTestServer { server in
            #expect(server.url("/headers?X-Note=a b").absoluteString.hasSuffix("/headers?X-Note=a%20b"))
        }
    }

    @Test("two servers get different ports")
    func distinctPorts() async throws {
        try await withTestServer { first in
            try await withTestServer { second in
                #expect(first.port != second.port)
            }
        }
    }

    @Test("shutdown closes stalled connections and stops listening")
    func shutdownClosesEverything() async throws {
        let server = try await TestServer.start()
        let client = try await RawHTTPClient.connect(port: server.port)
        try await client.send(RawHTTPClient.get("/fault/stall"))
        try await server.waitForRequests(count: 1)
        #expect(server.openConnections == 1)

        try await server.shutdown()

        let response = try await client.response(timeout: .seconds(10))
        #expect(response.byteCount == 0)
        #expect(server.openConnections == 0)
        // Not listening: a connection is refused, or, when another test's server was given the port since, made
        // to that server and never accepted by this one.
        let accepted = server.statistics.acceptedConnections
        if let late = try? await RawHTTPClient.connect(port: server.port) {
            try await late.send(RawHTTPClient.get("/json"))
            _ = try? await late.response(timeout: .seconds(10))
            #expect(server.statistics.acceptedConnections == accepted)
        }
        try await server.shutdown()  // A second shutdown does nothing.
    }

    @Test("open connections are counted while open and released when the client leaves")
    func connectionCounting() async throws {
        try await withTestServer { server in
            let client = try await RawHTTPClient.connect(port: server.port)
            try await server.waitForOpenConnections(1)
            await client.close()
            try await server.waitForOpenConnections(0)
            #expect(server.statistics.acceptedConnections == 1)
        }
    }

    @Test("waitUntil times out with a timeout error when the condition never holds")
    func waitTimesOut() async throws {
        try await withTestServer { server in
            let error = await #expect(throws: TestServerError.self) {
                try await server.waitForRequests(count: 1, timeout: .milliseconds(50))
            }
            #expect(error?.isTimeout == true)
        }
    }

    @Test("requests are recorded with method, target, path, headers and body size")
    func recordsRequests() async throws {
        try await withTestServer { server in
            let request =
                "POST /echo?a=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Probe: 42\r\nContent-Length: 5\r\n"
                + "Connection: close\r\n\r\nhello"
            _ = try await RawHTTPClient.exchange(request, port: server.port)
            try await server.waitUntil { $0.requests.first?.isComplete == true }
            let record = try #require(server.requests.first)
            #expect(record.method == "POST")
            #expect(record.uri == "/echo?a=1")
            #expect(record.path == "/echo")
            #expect(record.headerValue("x-probe") == "42")
            #expect(record.bodyByteCount == 5)
            #expect(record.responseStatus == 200)
            #expect(record.bodyBytesSent > 0)
            #expect(server.requestCount == 1)
            #expect(server.bytesSent > record.bodyBytesSent)
        }
    }

    @Test("a keep-alive connection serves several requests in order")
    func keepAlive() async throws {
        try await withTestServer { server in
            let pipelined = "GET /text HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + RawHTTPClient.get("/json")
            let response = try await RawHTTPClient.exchange(pipelined, port: server.port)
            let text = String(decoding: response.bytes, as: UTF8.self)
            #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
            #expect(text.hasSuffix(#"{"hello":"world","n":1}"#))
            #expect(server.statistics.acceptedConnections == 1)
            #expect(server.requests.map(\.path) == ["/text", "/json"])
        }
    }

    @Test("an upload to any endpoint is read and counted in full")
    func uploadCounted() async throws {
        try await withTestServer { server in
            let size = 3 << 20
            let client = try await RawHTTPClient.connect(port: server.port)
            try await client.send(
                "PUT /status/201 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(size)\r\nConnection: close\r\n\r\n")
            try await client.send(String(repeating: "x", count: size))
            let response = try await client.response()
            #expect(response.statusCode == 201)
            #expect(server.requests.first?.bodyByteCount == size)
        }
    }
}
