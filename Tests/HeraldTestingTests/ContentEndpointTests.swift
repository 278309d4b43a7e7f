import Foundation
import HeraldTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Content endpoints")
struct ContentEndpointTests {
    @Test("/status/{code} responds with that status and a short text body", arguments: [200, 201, 404, 418, 500, 503])
    func status(code: Int) async throws {
        try await withTestServer { server in
            let (data, response) = try await HTTP.get(server.url("/status/\(code)"))
            #expect(response.statusCode == code)
            #expect(String(decoding: data, as: UTF8.self).hasPrefix("\(code) "))
        }
    }

    @Test("/status/3xx?location= sends a Location header")
    func statusLocation() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/status/301?location=/text"), port: server.port)
            #expect(response.statusCode == 301)
            #expect(response.header("Location") == "/text")
        }
    }

    @Test("/status with an invalid code is a bad request")
    func statusInvalid() async throws {
        try await withTestServer { server in
            let (_, response) = try await HTTP.get(server.url("/status/abc"))
            #expect(response.statusCode == 400)
        }
    }

    @Test("/json serves the fixed JSON document")
    func json() async throws {
        try await withTestServer { server in
            let (data, response) = try await HTTP.get(server.url("/json"))
            #expect(response.statusCode == 200)
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
            #expect(String(decoding: data, as: UTF8.self) == #"{"hello":"world","n":1}"#)
        }
    }

    @Test("/json/invalid serves JSON that does not parse")
    func invalidJSON() async throws {
        try await withTestServer { server in
            let (data, response) = try await HTTP.get(server.url("/json/invalid"))
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
            #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: data) }
        }
    }

    @Test("/text, /html and /empty serve their content types")
    func textHTMLEmpty() async throws {
        try await withTestServer { server in
            let (text, textResponse) = try await HTTP.get(server.url("/text"))
            #expect(textResponse.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
            #expect(String(decoding: text, as: UTF8.self) == "Hello, Herald!\n")

            let (html, htmlResponse) = try await HTTP.get(server.url("/html"))
            #expect(htmlResponse.value(forHTTPHeaderField: "Content-Type") == "text/html; charset=utf-8")
            #expect(String(decoding: html, as: UTF8.self).contains("<html>"))

            let empty = try await RawHTTPClient.exchange(RawHTTPClient.get("/empty"), port: server.port)
            #expect(empty.statusCode == 204)
            #expect(empty.body.isEmpty)
            #expect(empty.header("Content-Length") == nil)
            #expect(empty.header("Transfer-Encoding") == nil)
        }
    }

    @Test("an unknown path is 404")
    func notFound() async throws {
        try await withTestServer { server in
            let (_, response) = try await HTTP.get(server.url("/no/such/thing"))
            #expect(response.statusCode == 404)
        }
    }

    @Test("HEAD gets the head with Content-Length and no body")
    func head() async throws {
        try await withTestServer { server in
            let request = "HEAD /text HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            let response = try await RawHTTPClient.exchange(request, port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("Content-Length") == "15")
            #expect(response.body.isEmpty)
        }
    }

    @Test("/echo describes the method, target, headers and body it received")
    func echo() async throws {
        try await withTestServer { server in
            var request = URLRequest(url: server.url("/echo?q=1"))
            request.httpMethod = "PUT"
            request.setValue("yes", forHTTPHeaderField: "X-Herald")
            request.httpBody = Data("payload".utf8)
            let (data, response) = try await HTTP.fetch(request)
            #expect(response.statusCode == 200)
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echoed.method == "PUT")
            #expect(echoed.uri == "/echo?q=1")
            #expect(echoed.headers["x-herald"] == "yes")
            #expect(echoed.body == "payload")
            #expect(echoed.bodyEncoding == "utf8")
            #expect(echoed.bodyLength == 7)
        }
    }

    @Test("/echo base64-encodes a body that is not UTF-8")
    func echoBinary() async throws {
        try await withTestServer { server in
            var request = URLRequest(url: server.url("/echo"))
            request.httpMethod = "POST"
            request.httpBody = Data([0xFF, 0x00, 0xFE])
            let (data, _) = try await HTTP.fetch(request)
            let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echoed.bodyEncoding == "base64")
            #expect(echoed.bodyBytes == [0xFF, 0x00, 0xFE])
        }
    }

    @Test("/headers responds with the headers named in its query")
    func headers() async throws {
        try await withTestServer { server in
            let (_, response) = try await HTTP.get(server.url("/headers?X-One=1&Cache-Control=no-store"))
            #expect(response.statusCode == 200)
            #expect(response.value(forHTTPHeaderField: "X-One") == "1")
            #expect(response.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        }
    }

    @Test("/headers answers 304 with the same fields when If-None-Match names its ETag")
    func headersNotModified() async throws {
        try await withTestServer { server in
            let target = "/headers?ETag=%22v1%22&Cache-Control=max-age%3D60"
            let matching = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [#"If-None-Match: "v1""#]), port: server.port)
            #expect(matching.statusCode == 304)
            #expect(matching.header("ETag") == #""v1""#)
            #expect(matching.header("Cache-Control") == "max-age=60")
            let other = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [#"If-None-Match: "v0""#]), port: server.port)
            #expect(other.statusCode == 200)
        }
    }

    @Test("/headers rejects a header value with a line break")
    func headersInjection() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/headers?X-Bad=a%0D%0AX-Evil:%201"), port: server.port)
            #expect(response.statusCode == 400)
            #expect(response.header("X-Evil") == nil)
        }
    }

    @Test("a request with Expect: 100-continue gets an interim 100 before the final response")
    func expectContinue() async throws {
        try await withTestServer { server in
            let request =
                "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
                + "Connection: close\r\n\r\nhi"
            let response = try await RawHTTPClient.exchange(request, port: server.port)
            let text = String(decoding: response.bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
            #expect(text.contains(#""bodyLength":2,"#))
        }
    }
}
