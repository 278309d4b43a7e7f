import Foundation
import HeraldTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Redirects, authentication and delays")
struct RedirectAuthDelayTests {
    @Test("/redirect/{n} is a chain of n 302s ending in 200 at /redirect/0")
    func redirectChain() async throws {
        try await withTestServer { server in
            let first = try await RawHTTPClient.exchange(RawHTTPClient.get("/redirect/3"), port: server.port)
            #expect(first.statusCode == 302)
            #expect(first.header("Location") == "/redirect/2")

            let (data, response) = try await HTTP.get(server.url("/redirect/3"))
            #expect(response.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == "redirected\n")
            #expect(
                server.requests.map(\.path).suffix(4) == ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"])
        }
    }

    @Test("/redirect/{n}?status= keeps the chosen status along the chain")
    func redirectStatus() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/redirect/2?status=307"), port: server.port)
            #expect(response.statusCode == 307)
            #expect(response.header("Location") == "/redirect/1?status=307")
        }
    }

    @Test("/redirect-to redirects to the given URL with the given status, and needs a url")
    func redirectTo() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/redirect-to?url=http://example.invalid/x&status=307"), port: server.port)
            #expect(response.statusCode == 307)
            #expect(response.header("Location") == "http://example.invalid/x")

            let missing = try await RawHTTPClient.exchange(RawHTTPClient.get("/redirect-to"), port: server.port)
            #expect(missing.statusCode == 400)
        }
    }

    @Test("/auth/basic challenges without credentials, rejects wrong ones and accepts the right ones")
    func basicAuth() async throws {
        try await withTestServer { server in
            // Raw requests: corelibs URLSession never completes a 401 carrying WWW-Authenticate without a delegate.
            let target = "/auth/basic?user=ann&password=secret"
            let challenge = try await RawHTTPClient.exchange(RawHTTPClient.get(target), port: server.port)
            #expect(challenge.statusCode == 401)
            #expect(challenge.header("WWW-Authenticate") == #"Basic realm="herald""#)

            let wrong = "Authorization: Basic " + Data("ann:nope".utf8).base64EncodedString()
            let rejected = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [wrong]), port: server.port)
            #expect(rejected.statusCode == 401)

            let right = "Authorization: Basic " + Data("ann:secret".utf8).base64EncodedString()
            let accepted = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [right]), port: server.port)
            #expect(accepted.statusCode == 200)
            #expect(String(decoding: accepted.body, as: UTF8.self) == #"{"authenticated":true,"user":"ann"}"#)
        }
    }

    @Test("/auth/basic without user and password parameters is a bad request")
    func basicAuthMissingParameters() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/auth/basic?user=ann"), port: server.port)
            #expect(response.statusCode == 400)
        }
    }

    @Test("/delay/{ms} answers no sooner than ms milliseconds later")
    func delay() async throws {
        try await withTestServer { server in
            let start = ContinuousClock.now
            let (data, response) = try await HTTP.get(server.url("/delay/200"))
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            #expect(response.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == #"{"delayMilliseconds":200}"#)
        }
    }

    @Test("a client leaving during /delay does not disturb the server")
    func delayAbandoned() async throws {
        try await withTestServer { server in
            let client = try await RawHTTPClient.connect(port: server.port)
            try await client.send(RawHTTPClient.get("/delay/60000"))
            try await server.waitForRequests(count: 1)
            await client.close()
            try await server.waitForOpenConnections(0)
            #expect(server.requests.first?.isComplete == true)
            let (_, response) = try await HTTP.get(server.url("/text"))
            #expect(response.statusCode == 200)
        }
    }
}
